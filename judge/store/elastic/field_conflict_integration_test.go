package elastic_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
)

// TestElasticFieldConflictKeepsTheDocumentIntegration: a custom metric name that clashes
// with the mapping ("zz.conf.sub" once "zz.conf" is a number, and "zz" beside it) costs
// only its own point: the engine refuses the node's document for that one field, and
// Write writes it again without the field, so that cpu.util and mem.used_pct of the
// same node and time are stored, and only the clashing points are counted refused.
// Both as a create (a new document) and as an update (the document exists).
func TestElasticFieldConflictKeepsTheDocumentIntegration(t *testing.T) {
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	s := newStore(t, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts := time.Date(2018, 3, 3, 3, 0, 0, 0, time.UTC)
	if err := s.Write(ctx, []store.Point{
		{Node: "mc-1", Name: "zz.conf", TS: ts, Value: 1},
		{Node: "mc-1", Name: "cpu.util", TS: ts, Value: 3},
	}); err != nil {
		t.Fatalf("first batch: %v", err)
	}
	at := ts.Add(5 * time.Second)
	batch := []store.Point{
		{Node: "mc-1", Name: "cpu.util", TS: at, Value: 7},
		{Node: "mc-1", Name: "mem.used_pct", TS: at, Value: 55},
		{Node: "mc-1", Name: "zz.conf.sub", TS: at, Value: 1}, // object under a number
		{Node: "mc-1", Name: "load.1", TS: at, Value: 0.5},
		{Node: "mc-1", Name: "zz", TS: at, Value: 2}, // a number over an object
	}
	for _, pass := range []string{"create", "update"} {
		err := s.Write(ctx, batch)
		var refused *store.RefusedError
		if !errors.As(err, &refused) || !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("%s: second batch: %v, want a *store.RefusedError", pass, err)
		}
		if refused.Points != 2 || refused.Total != len(batch) {
			t.Errorf("%s: refused %d of %d points, want 2 of %d (zz.conf.sub and zz): %v", pass, refused.Points, refused.Total, len(batch), err)
		}
		for _, name := range []string{"zz.conf.sub", "zz"} {
			if !strings.Contains(err.Error(), `"`+name+`"`) {
				t.Errorf("%s: %v does not name %q", pass, err, name)
			}
		}
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	for name, want := range map[string]int64{"cpu.util": 2, "mem.used_pct": 1, "load.1": 1, "zz.conf": 1} {
		got, err := s.Stats(ctx, store.Query{Node: "mc-1", Name: name, From: ts, To: ts.Add(time.Hour)})
		if err != nil || got.Count != want {
			t.Errorf("%s: %+v, %v; want %d points stored", name, got, err, want)
		}
	}
	if got, err := s.Stats(ctx, store.Query{Node: "mc-1", Name: "cpu.util", From: at, To: at.Add(time.Second)}); err != nil || got.Max != 7 {
		t.Errorf("cpu.util of the second batch: %+v, %v; want 7", got, err)
	}
}
