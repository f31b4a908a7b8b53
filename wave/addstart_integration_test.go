package wave_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// TestRowsBeforeFirstConnectIntegration: an instance added without a start captures the
// rows written after its add but before a wave first connects to its source, whether
// `instance add` could read the source (its end is stored as the start) or not (the
// password is only on the waves' hosts: the wave begins at the binlog file the source
// was writing at the add). The wave here lacks the password at first (secret_missing,
// retrying) and gets it after the row is written: before, its "first start" began at the
// source's end at that moment, and the row was lost without a word.
func TestRowsBeforeFirstConnectIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	for _, tc := range []struct {
		name      string
		addHasPW  bool // the host of `instance add` has the password
		wantStart bool // and so stores the source's end as the start
	}{
		{"add reads the source", true, true},
		{"add cannot read the source", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, exec, _ := testenv.ScratchDatabase(t, "wave_addstart")
			exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
			topic := "addstart." + strings.ReplaceAll(tc.name, " ", "-")
			inst := &cluster.Instance{ID: "addstart", Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB,
				ServerID: testenv.ReplicaServerID(), PasswordEnv: fmt.Sprintf("BINLAKE_TEST_UNSET_%d", time.Now().UnixNano())},
				Subscriptions: []cluster.Subscription{{Name: "all", Topic: topic, Include: []string{db + `\.t`}}}}
			secret := func(haveIt bool) func(cluster.Source) (config.Secret, error) {
				return func(cluster.Source) (config.Secret, error) {
					if haveIt {
						return config.Secret(a.Password), nil
					}
					return "", fmt.Errorf("%w: not on this host (test)", wave.ErrSecretMissing)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			note := wave.ResolveStart(ctx, inst, secret(tc.addHasPW), time.Now())
			if (inst.Start != nil) != tc.wantStart || (inst.AddedAt != 0) == tc.wantStart {
				t.Fatalf("after ResolveStart: start %v, added_at %d (%s)", inst.Start, inst.AddedAt, note)
			}
			c := singleCoord(t)
			if _, err := cluster.AddInstance(ctx, c, inst, "wave-s", nil); err != nil {
				t.Fatal(err)
			}

			b, pub := memoryBus(t)
			var fixed atomic.Bool
			wv, stop := runWave(t, ctx, wave.Options{Node: "wave-s", Coord: c, Publisher: pub, Topics: b, TopicSpec: bus.TopicSpec{Partitions: 1},
				PollInterval: 100 * time.Millisecond, Logger: testLogger(t),
				Password: func(s cluster.Source) (config.Secret, error) { return secret(fixed.Load())(s) }})
			defer stop()
			waitState(t, ctx, wv, inst.ID, cluster.StateRetrying)

			exec("INSERT INTO " + db + ".t VALUES (1)")
			fixed.Store(true)
			waitState(t, ctx, wv, inst.ID, cluster.StateRunning)
			exec("INSERT INTO " + db + ".t VALUES (2)")

			got := map[string]bool{}
			for _, m := range readUntil(t, ctx, b, topic, func(m received) bool { return m.typ == "insert" && m.id == "2" }) {
				if m.typ == "insert" {
					got[m.id] = true
				}
			}
			if !got["1"] {
				t.Fatalf("the row written before the wave first connected was not captured (inserts seen: %v)", got)
			}
		})
	}
}

// readUntil reads topic from its start until a message satisfies last, and returns the
// messages read.
func readUntil(t *testing.T, ctx context.Context, b *memory.Bus, topic string, last func(received) bool) []received {
	t.Helper()
	for b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1}) != nil {
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: "verify"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []received
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		r := decode(t, topic, m.Key, m.Value, false)
		out = append(out, r)
		if last(r) {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("reading %s: %v; read %d messages", topic, err, len(out))
	}
	return out
}
