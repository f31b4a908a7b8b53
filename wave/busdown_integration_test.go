package wave_test

import (
	"context"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestBusDownAtStartIsNotTheSourceIntegration: Kafka refusing the wave as an instance
// starts (its topics cannot be created) is the reason bus_unreachable, not
// source_unreachable: its dial errors are network errors as a source's are, and an
// outside trial's status sent the operator to MySQL for a Kafka fault.
func TestBusDownAtStartIsNotTheSourceIntegration(t *testing.T) {
	wavetest.Connect(t)
	testBusReason(t, "busdown", []string{testenv.FreeAddr(t)}, 0, wave.ReasonBusUnreachable)
}

// TestBusRefusalIsNotBusDownIntegration: the real Kafka refusing a topic the instance
// asks for (a replication factor above its one broker) is the reason bus_refused, an
// operator's fix: it was bus_unreachable, retried for ever as if Kafka were down (an
// outside trial).
func TestBusRefusalIsNotBusDownIntegration(t *testing.T) {
	testBusReason(t, "busrefused", []string{testenv.Require(t, testenv.Kafka)}, 5, wave.ReasonBusRefused)
}

// testBusReason starts instance id on a wave whose bus is brokers, its topics asked with
// replication, and waits for the reason its status gives.
func testBusReason(t *testing.T, id string, brokers []string, replication int, want string) {
	a := testenv.RequireMySQL(t)
	inst := &cluster.Instance{ID: id, Start: wavetest.CurrentPos(t),
		Source:        cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "rows", Topic: id + ".rows", Include: []string{`busdown_nosuch\.t`}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := singleCoord(t)
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-b", nil); err != nil {
		t.Fatal(err)
	}
	b, err := kafka.New(kafka.Options{Brokers: brokers, MaxAttempts: 1, WriteTimeout: time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	wv, stop := runWave(t, ctx, wave.Options{Node: "wave-b", Coord: c, Publisher: pub, Topics: b,
		TopicSpec: bus.TopicSpec{Partitions: 1, Replication: replication}, MaxMessageBytes: 1 << 20, PollInterval: 100 * time.Millisecond, Logger: testLogger(t)})
	defer stop()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		for _, s := range wv.Status() {
			if s.ID == inst.ID && s.Reason != "" {
				if s.Reason != want {
					t.Fatalf("status %+v: want reason %s", s, want)
				}
				t.Logf("status: %s, %s: %s", s.State, s.Reason, s.Error)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reason in the status within a minute: %+v", wv.Status())
		}
	}
}
