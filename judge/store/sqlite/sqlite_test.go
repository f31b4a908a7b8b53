package sqlite_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/judge/store/storetest"
)

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(sqlite.Options{Path: path})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newStore(t *testing.T) store.Store {
	return open(t, filepath.Join(t.TempDir(), "metrics.db"))
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore)
}

// TestLarge is the acceptance on the embedded store: 100,000 points, and here the
// percentile must be exact, not merely within the sketch window.
func TestLarge(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	got, vals := storetest.Large(t, newStore(t), n)
	if want := store.P95(vals); math.Abs(got.P95-want) > 1e-9*want {
		t.Fatalf("p95 %.12g, want exactly %.12g", got.P95, want)
	}
}

// TestExactP95 checks the SQL percentile against store.P95 for every count from 1 to
// 60, where rank rounding matters most, in Stats and per hour in Profile.
func TestExactP95(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for n := 1; n <= 60; n++ {
		node := "n" + strings.Repeat("x", n%3) + string(rune('A'+n%26)) + time.Duration(n).String()
		var pts []store.Point
		perHour := map[int][]float64{}
		var all []float64
		for i := range n {
			ts := base.Add(time.Duration(i%5)*time.Hour + time.Duration(i)*time.Second)
			v := math.Round(rng.Float64()*1000) / 8 // ties included
			pts = append(pts, store.Point{Node: node, Name: "m", TS: ts, Value: v})
			perHour[ts.Hour()] = append(perHour[ts.Hour()], v)
			all = append(all, v)
		}
		if err := s.Write(ctx, pts); err != nil {
			t.Fatalf("write: %v", err)
		}
		q := store.Query{Node: node, Name: "m", From: base, To: base.Add(24 * time.Hour)}
		st, err := s.Stats(ctx, q)
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		slices.Sort(all)
		if want := store.P95(all); st.P95 != want {
			t.Errorf("n=%d: p95 %v, want %v", n, st.P95, want)
		}
		prof, err := s.Profile(ctx, q)
		if err != nil {
			t.Fatalf("profile: %v", err)
		}
		for h := range 24 {
			vs := perHour[h]
			slices.Sort(vs)
			if prof[h].Count != int64(len(vs)) || prof[h].P95 != store.P95(vs) {
				t.Errorf("n=%d hour %d: %+v, want count %d p95 %v", n, h, prof[h], len(vs), store.P95(vs))
			}
		}
	}
}

// TestReopen checks that points survive closing and reopening the file.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.db")
	s := open(t, path)
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pts := []store.Point{
		{Node: "w1", Name: "cpu.util", TS: ts, Value: 10},
		{Node: "w1", Name: "cpu.util", TS: ts.Add(time.Second), Value: 30},
	}
	if err := s.Write(context.Background(), pts); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s = open(t, path)
	got, err := s.Stats(context.Background(), store.Query{Node: "w1", Name: "cpu.util", From: ts, To: ts.Add(time.Minute)})
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if got.Count != 2 || got.Avg != 20 || got.Max != 30 {
		t.Fatalf("after reopen: %+v, want count 2 avg 20 max 30", got)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path, want string
	}{
		{"empty", "", "path is empty"},
		{"memory", ":memory:", "must be a file path"},
		{"query", filepath.Join(dir, "a.db?mode=ro"), "must be a file path"},
		{"missing dir", filepath.Join(dir, "no", "such", "a.db"), "create schema"},
		{"a directory", dir, "create schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(sqlite.Options{Path: tc.path})
			if err == nil {
				s.Close()
				t.Fatalf("open %q: no error", tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open %q: %v, want %q", tc.path, err, tc.want)
			}
		})
	}
}
