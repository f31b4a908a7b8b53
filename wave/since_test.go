package wave

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/sink"
)

// An instance's since is when its state and its reason began: `instance list` shows them
// side by side, and a reason that changed during one outage (its password file missing,
// then wrong) read as if it had held since the outage's start (an outside trial). A
// change of its error's text alone keeps it.
func TestSinceFollowsTheStateAndItsReason(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := New(Options{Node: "wave-s", Coord: c, Publisher: sink.New(io.Discard), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	set := func(state, reason, msg string) string {
		w.setStatus("orders", func(s *InstanceStatus) { s.State, s.Reason, s.Error = state, reason, msg })
		w.mu.Lock()
		defer w.mu.Unlock()
		since := w.status["orders"].Since
		w.status["orders"].Since = "marked" // what a later change keeps or replaces
		return since
	}
	set(cluster.StateRetrying, "secret_missing", "no file")
	for i, step := range []struct {
		state, reason, msg string
		kept               bool
	}{
		{cluster.StateRetrying, "secret_missing", "no file, again", true},
		{cluster.StateRetrying, "access_denied", "denied", false},
		{cluster.StateReconnecting, "access_denied", "denied", false},
	} {
		if got := set(step.state, step.reason, step.msg); (got == "marked") != step.kept {
			t.Errorf("step %d (%s, %s): since %q, kept %v", i, step.state, step.reason, got, step.kept)
		}
	}
}
