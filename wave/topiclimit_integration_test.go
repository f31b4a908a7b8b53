package wave_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// limitedTopics is a bus whose topics take messages up to limit bytes, as a Kafka
// topic's max.message.bytes below the sink's max_message_bytes that the wave could not
// raise (no AlterConfigs permission).
type limitedTopics struct {
	*memory.Bus
	limit int
}

func (l limitedTopics) TopicMaxMessageBytes(context.Context, string) (int, error) {
	return l.limit, nil
}

// TestWaveHoldsRowsToTopicLimitIntegration: a topic that takes smaller messages than the
// sink's max_message_bytes holds the instance's rows to its limit: a row above it stops
// the instance with an error that names the table, the binlog position, the size and the
// topic's limit, rather than one from the broker that names none of them.
func TestWaveHoldsRowsToTopicLimitIntegration(t *testing.T) {
	conn := wavetest.Connect(t)
	w := newWorkload(t, 6)
	wavetest.MustExec(t, conn, "USE "+w.db)
	wavetest.MustExec(t, conn, "CREATE TABLE t_big (id INT PRIMARY KEY, body MEDIUMTEXT)")
	start := wavetest.CurrentPos(t)
	wavetest.MustExec(t, conn, "INSERT INTO t_big VALUES (1, 'small')")
	wavetest.MustExec(t, conn, "INSERT INTO t_big VALUES (2, REPEAT('x', 5000))")
	a := testenv.RequireMySQL(t)
	inst := &cluster.Instance{ID: "topiclimit", Start: start,
		Source:        cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "big.limited", Include: []string{strings.ReplaceAll(w.db, ".", `\.`) + `\.t_big`}}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := singleCoord(t)
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-l", nil); err != nil {
		t.Fatal(err)
	}
	b, pub := memoryBus(t)
	wv, stop := runWave(t, ctx, wave.Options{Node: "wave-l", Coord: c, Publisher: pub, Topics: limitedTopics{Bus: b, limit: 3000},
		TopicSpec: bus.TopicSpec{Partitions: 1}, MaxMessageBytes: 1 << 20, PollInterval: 100 * time.Millisecond, Logger: testLogger(t)})
	defer stop()
	waitState(t, ctx, wv, inst.ID, cluster.StateError)
	st := wv.Status()[0]
	for _, want := range []string{"larger than the sink accepts", w.db + ".t_big at ", "the limit 2872",
		"topic big.limited's max.message.bytes 3000, below the sink's max_message_bytes 1048576",
		"`binlake instance set " + inst.ID + " -on-too-large skip` (in place: it resumes from its committed offset;"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("error %q does not say %q", st.Error, want)
		}
	}
	if st.Reason != wave.ReasonMessageTooLarge {
		t.Errorf("reason %q, want %s", st.Reason, wave.ReasonMessageTooLarge)
	}
}
