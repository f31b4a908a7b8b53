package cluster_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestSetHandling: on_unreadable and on_too_large change in place, the offset and the
// rest of the definition kept (the wave then resumes from the offset); a value other
// than stop or skip, or an unknown instance, is refused naming it; the same values again
// change nothing.
func TestSetHandling(t *testing.T) {
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			orders := wavetest.ValidInstance()
			if _, err := cluster.AddInstance(ctx, c, &orders, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			at := putOffset(t, c, orders.ID)
			changed, err := cluster.SetHandling(ctx, c, orders.ID, cluster.Handling{OnUnreadable: cluster.UnreadableSkip})
			if err != nil || !changed {
				t.Fatalf("set: changed %v, %v", changed, err)
			}
			got, err := cluster.GetInstance(ctx, c, orders.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := orders
			want.OnUnreadable = cluster.UnreadableSkip
			if a, b := mustMarshal(t, got), mustMarshal(t, &want); a != b {
				t.Errorf("definition %s, want %s", a, b)
			}
			expectOffset(t, c, orders.ID, at)
			if changed, err := cluster.SetHandling(ctx, c, orders.ID, cluster.Handling{OnUnreadable: cluster.UnreadableSkip}); err != nil || changed {
				t.Errorf("the same again: changed %v, %v", changed, err)
			}
			if _, err := cluster.SetHandling(ctx, c, orders.ID, cluster.Handling{OnTooLarge: "drop"}); err == nil || !strings.Contains(err.Error(), `"on_too_large": "drop": want stop or skip`) {
				t.Errorf("a bad value: %v", err)
			}
			if _, err := cluster.SetHandling(ctx, c, "nope", cluster.Handling{OnUnreadable: cluster.UnreadableSkip}); !errors.Is(err, coord.ErrNotFound) {
				t.Errorf("an unknown instance: %v", err)
			}
		})
	}
}

func mustMarshal(t *testing.T, in *cluster.Instance) string {
	t.Helper()
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// putOffset commits an offset for instance id, as its wave would, and returns it.
func putOffset(t *testing.T, c coord.Coordinator, id string) cluster.Position {
	t.Helper()
	at := cluster.Position{File: "bin.000007", Pos: 1293, GTIDSet: "0-1-9"}
	off, err := json.Marshal(at)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(t.Context(), cluster.OffsetKey(id), off, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	return at
}

// expectOffset fails the test unless instance id's committed offset is still at.
func expectOffset(t *testing.T, c coord.Coordinator, id string, at cluster.Position) {
	t.Helper()
	if off, _, ok, err := cluster.ReadOffset(t.Context(), c, id); err != nil || !ok || off.File != at.File || off.Pos != at.Pos {
		t.Errorf("offset %v %v %v, want %v kept", off, ok, err, at)
	}
}
