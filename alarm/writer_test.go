package alarm

import (
	"context"
	"testing"

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
