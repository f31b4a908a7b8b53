package alarm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gatedLog is a notification log whose compare-and-set writes wait for the test to
// open the gate.
type gatedLog struct {
	NotificationLog
	entered chan struct{}
	release chan struct{}
}

func (g *gatedLog) Put(ctx context.Context, e LogEntry, version int64) error {
	g.entered <- struct{}{}
	<-g.release
	return g.NotificationLog.Put(ctx, e, version)
}

// The notification log is written off the evaluation: Observe returns while the claim of
// a page is still being written, the page goes out only once the claim is in the log,
// and the batch is acknowledged (the bus may commit it) only then, so a crash before the
// write redelivers the batch rather than losing the page.
func TestLogWritesLeaveTheEvaluation(t *testing.T) {
	var gl *gatedLog
	r := newRig(t, basePolicy, func(o *EngineOptions) {
		gl = &gatedLog{NotificationLog: o.Log, entered: make(chan struct{}, 8), release: make(chan struct{})}
		o.Log = gl
	})
	acked := make(chan struct{})
	r.e.ObserveAck(batch("wave-1", r.clk.Now(), cpu(95)), func() { close(acked) })
	<-gl.entered // the writer is in the claim's write; Observe has returned
	require.Equal(t, "firing", r.state("wave-1"))
	r.e.Observe(batch("wave-2", r.clk.Now(), cpu(10))) // evaluation goes on meanwhile
	select {
	case <-acked:
		t.Fatal("the batch was acknowledged before its claim was written")
	default:
	}
	r.out.mu.Lock()
	require.Empty(t, r.out.msgs, "no page before its claim is in the log")
	r.out.mu.Unlock()
	close(gl.release)
	<-acked
	require.Equal(t, []string{F}, r.out.take())
	entries, err := gl.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, 1, entries[0].Sent, "recorded as sent once delivered")
}

// resolvedBehindTheWriter is a rig whose writer was held in wave-0's claim while wave-1
// fired at value v and resolved a second later (at 10); then the writer takes wave-1's
// page and resolution in one go.
func resolvedBehindTheWriter(t *testing.T, v float64) *rig {
	var gl *gatedLog
	r := newRig(t, basePolicy, func(o *EngineOptions) {
		gl = &gatedLog{NotificationLog: o.Log, entered: make(chan struct{}, 8), release: make(chan struct{})}
		o.Log = gl
	})
	r.e.Observe(batch("wave-0", r.clk.Now(), cpu(95)))
	<-gl.entered // the writer is held in wave-0's claim
	r.e.Observe(batch("wave-1", r.clk.Now(), cpu(v)))
	r.clk.Add(time.Second)
	r.e.Observe(batch("wave-1", r.clk.Now(), cpu(10)))
	close(gl.release)
	return r
}

// A page and its resolution decided before the writer's next flush (an alert that held
// for one point while the writer was behind, group_wait 0) both go out, the page first,
// in two messages: the resolution does not replace the claimed page in its group.
func TestAPageIsNotReplacedByItsResolution(t *testing.T) {
	r := resolvedBehindTheWriter(t, 95)
	ms := r.out.messages()
	require.Equal(t, []string{"cpu/P2 [firing wave-0/]", "cpu/P2 [firing wave-1/]", "cpu/P2 [resolved wave-1/]"}, sent(ms))
}

// The page of an alert that held while the writer was behind (a backlog read after a
// restart: the evaluation runs ahead of the log writes) says what fired it: the value,
// the summary and the state of its violating point, not those of the point that resolved
// it before the writer got to the claim. The resolution carries its own.
func TestAPageKeepsTheValueThatFiredIt(t *testing.T) {
	r := resolvedBehindTheWriter(t, 97)
	var got []string
	for _, m := range r.out.messages() {
		for _, a := range m.Alerts {
			if a.Labels["node"] == "wave-1" {
				got = append(got, fmt.Sprintf("%s %v %q", a.Status, a.Value, a.Annotations["summary"]))
			}
		}
	}
	require.Equal(t, []string{`firing 97 "wave-1 at 97"`, `resolved 10 "wave-1 at 10"`}, got)
}
