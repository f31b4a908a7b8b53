package wave

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
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

// A wave that takes an instance over in the trouble its status record names (the same
// state for the same reason) keeps the record's since: a restart during an outage showed
// the new process's start as the outage's. Another reason, or running, begins anew.
func TestSinceCarriedFromTheRecordedTrouble(t *testing.T) {
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	rec, _ := json.Marshal(cluster.RecordedStatus{Node: "wave-old", State: cluster.StateRetrying, Reason: "access_denied", Since: began})
	for _, tc := range []struct {
		state, reason string
		kept          bool
	}{
		{cluster.StateRetrying, "access_denied", true},
		{cluster.StateRetrying, "secret_missing", false},
		{cluster.StateReconnecting, "access_denied", false},
		{cluster.StateRunning, "", false},
	} {
		if _, err := c.Put(context.Background(), cluster.StatusKey("orders"), rec, coord.AnyVersion); err != nil {
			t.Fatal(err)
		}
		w, err := New(Options{Node: "wave-s", Coord: c, Publisher: sink.New(io.Discard), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		// A term passes through starting (its pipeline begun, the source not yet read)
		// before the trouble shows again: the carry held only straight from standby, and
		// a real restart showed its own start (a retrial).
		w.setStatus("orders", func(s *InstanceStatus) { s.State = cluster.StateStandby })
		w.setStatus("orders", func(s *InstanceStatus) { s.State = cluster.StateStarting })
		w.setStatus("orders", func(s *InstanceStatus) { s.State, s.Reason = tc.state, tc.reason })
		got := w.Status()[0].Since
		if (got == began) != tc.kept {
			t.Errorf("%s (%s) after the record's %s (access_denied): since %s, want the record's kept %v", tc.state, tc.reason, cluster.StateRetrying, got, tc.kept)
		}
		if !tc.kept {
			continue
		}
		// Running once in the term ends the inherited outage: a later trouble is new.
		w.setStatus("orders", func(s *InstanceStatus) { s.State, s.Reason = cluster.StateRunning, "" })
		w.setStatus("orders", func(s *InstanceStatus) { s.State, s.Reason = tc.state, tc.reason })
		if got := w.Status()[0].Since; got == began {
			t.Errorf("%s (%s) after running in the term: since %s, want its own", tc.state, tc.reason, got)
		}
	}
}
