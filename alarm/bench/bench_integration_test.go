package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/testenv"
)

// TestBenchIntegration runs a short, small bench against the test services' Kafka and a
// real alarm process built from the tree: every point produced is evaluated, the group
// reads to the end, every violation reaches the webhook, and the run leaves nothing
// behind.
func TestBenchIntegration(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	o := DefaultOptions()
	o.Binary = testenv.BinlakeBinary(t)
	o.Brokers = testenv.HostPorts(brokers)
	o.Nodes, o.Policies, o.Rate, o.Duration, o.Violations = 10, 5, 20_000, 5*time.Second, 3
	o.Progress = time.Second
	var out bytes.Buffer
	o.Out = &out
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Arrived != 3 || res.Sent != 3 || res.Latency.N != 3 {
		t.Errorf("%d of 3 violations arrived (%d sent)", res.Arrived, res.Sent)
	}
	if res.Evaluated != res.Produced || res.Produced != res.LoadPoints+int64(o.Batch) || res.LoadPoints == 0 {
		t.Errorf("evaluated %d points, produced %d (%d in the load)", res.Evaluated, res.Produced, res.LoadPoints)
	}
	if res.LagEnd != 0 {
		t.Errorf("lag at the end %d messages, want 0", res.LagEnd)
	}
	if res.AlarmCPU <= 0 || res.Evaluations == 0 {
		t.Errorf("alarm CPU %s, %d evaluations: want both measured", res.AlarmCPU, res.Evaluations)
	}

	// Cleaned up: the alarm exited, its folder and the topic are gone.
	if err := syscall.Kill(res.AlarmPID, 0); err == nil || res.AlarmPID == 0 {
		t.Errorf("the alarm (pid %d) still runs after the bench", res.AlarmPID)
	}
	if _, err := os.Stat(res.Dir); !os.IsNotExist(err) || res.Dir == "" {
		t.Errorf("folder %q still there after the bench: %v", res.Dir, err)
	}
	k := benchkit.NewKafka(o.Brokers)
	defer k.Close()
	// The brokers accept a deletion before their metadata forgets the topic (a CI run
	// listed it right after the bench), so the topic has a few seconds to go.
	var gone bool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var exists bool
		if exists, err = k.TopicExists(ctx, res.Topic); err == nil && !exists {
			gone = true
		}
		if gone || time.Now().After(deadline) {
			break
		}
	}
	if !gone {
		t.Errorf("topic %s still exists 10 s after the bench (%v)", res.Topic, err)
	}
	if !strings.Contains(out.String(), "violation → webhook p50") {
		t.Errorf("report lacks the latency line:\n%s", out.String())
	}
}
