package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/binlake/binlake/judge/store"
)

// packFixture is a store on a clock the test sets, and what it needs to write a series'
// points and check what the store holds.
type packFixture struct {
	t   *testing.T
	s   *Store
	now time.Time
}

func newPackFixture(t *testing.T) *packFixture {
	t.Helper()
	f := &packFixture{t: t, now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "metrics.db"), Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	f.s = s
	return f
}

// write stores two series' points every 10 s in [from, to), the clock at to.
func (f *packFixture) write(from, to time.Time) {
	f.t.Helper()
	f.now = to
	var pts []store.Point
	for ts := from; ts.Before(to); ts = ts.Add(10 * time.Second) {
		v := float64(ts.Unix() % 1000)
		pts = append(pts,
			store.Point{Node: "w1", Name: "cpu.util", TS: ts, Value: v},
			store.Point{Node: "w1", Name: "wave.tps", Labels: map[string]string{"instance": "orders"}, TS: ts, Value: v + 1})
	}
	if err := f.s.Write(context.Background(), pts); err != nil {
		f.t.Fatalf("write %s..%s: %v", from, to, err)
	}
}

// state is the watermark, how many chunks the file holds, and how many points recent
// holds (table and index).
func (f *packFixture) state() (watermark time.Time, chunks, recentRows, indexed int) {
	f.t.Helper()
	ctx := context.Background()
	if err := f.s.w.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&chunks); err != nil {
		f.t.Fatal(err)
	}
	if err := f.s.w.QueryRowContext(ctx, `SELECT count(*) FROM recent`).Scan(&recentRows); err != nil {
		f.t.Fatal(err)
	}
	f.s.recent.mu.RLock()
	defer f.s.recent.mu.RUnlock()
	return time.UnixMilli(f.s.recent.watermark).UTC(), chunks, recentRows, f.s.recent.points
}

// expect checks the watermark and that every point written in [from, to) reads back,
// whether packed or in recent.
func (f *packFixture) expect(what string, watermark, from, to time.Time) {
	f.t.Helper()
	w, _, rows, indexed := f.state()
	if !w.Equal(watermark) {
		f.t.Errorf("%s: watermark %s, want %s", what, w.Format(time.TimeOnly), watermark.Format(time.TimeOnly))
	}
	if rows != indexed {
		f.t.Errorf("%s: recent holds %d rows, its index counts %d points", what, rows, indexed)
	}
	want := int64(to.Sub(from) / (10 * time.Second))
	st, err := f.s.Stats(context.Background(), store.Query{Node: "w1", Name: "cpu.util", From: from, To: to})
	if err != nil || st.Count != want {
		f.t.Errorf("%s: %d points of cpu.util read back (%v), want %d", what, st.Count, err, want)
	}
}

// TestPackingWaitsForASpan: recent's points are packed into chunks once packSpan of
// whole buckets lies before the target (a minute behind the newest point), all of them
// in one go; until then they stay in recent, where reads find them.
func TestPackingWaitsForASpan(t *testing.T) {
	f := newPackFixture(t)
	t0 := f.now
	// The first write finds the watermark at 1970: everything before the target is due.
	f.write(t0, t0.Add(10*time.Minute))
	f.expect("first write", t0.Add(5*time.Minute), t0, t0.Add(10*time.Minute))
	_, chunks, _, _ := f.state()
	if chunks != 2 {
		t.Fatalf("first write: %d chunks, want 2 (both series' first bucket)", chunks)
	}
	// 25 minutes before the target: not due.
	f.write(t0.Add(10*time.Minute), t0.Add(35*time.Minute))
	f.expect("25 minutes due", t0.Add(5*time.Minute), t0, t0.Add(35*time.Minute))
	if _, c, _, _ := f.state(); c != chunks {
		t.Fatalf("25 minutes due: %d chunks, want still %d", c, chunks)
	}
	// The newest point a minute past the next bucket: 30 minutes due, all packed.
	f.write(t0.Add(35*time.Minute), t0.Add(36*time.Minute+10*time.Second))
	f.expect("30 minutes due", t0.Add(35*time.Minute), t0, t0.Add(36*time.Minute+10*time.Second))
	if _, c, _, _ := f.state(); c != 2*7 {
		t.Fatalf("30 minutes due: %d chunks, want %d (both series' 7 buckets)", c, 2*7)
	}
}

// TestPackingBoundedByPoints: recent holding recentBound points packs what is before
// the target although less than packSpan is due, so that a large fleet's recent stays
// bounded in memory.
func TestPackingBoundedByPoints(t *testing.T) {
	f := newPackFixture(t)
	t0 := f.now
	f.write(t0, t0.Add(6*time.Minute))
	f.expect("first write", t0, t0, t0.Add(6*time.Minute))
	f.s.recentBound = 2 * 6 * 13 // two series, 13 minutes at 10 s
	f.write(t0.Add(6*time.Minute), t0.Add(12*time.Minute))
	f.expect("under the bound", t0, t0, t0.Add(12*time.Minute))
	f.write(t0.Add(12*time.Minute), t0.Add(17*time.Minute))
	f.expect("over the bound", t0.Add(15*time.Minute), t0, t0.Add(17*time.Minute))
	if _, _, _, n := f.state(); n != 2*6*2 {
		t.Fatalf("over the bound: recent holds %d points, want the last 2 minutes' %d", n, 2*6*2)
	}
}

// TestPackingABacklog: a recent holding hours before the target (a file converted from
// schema version 1, a watermark left behind) is packed to the target in one Write (in
// transactions of packSpan each), and every point reads back.
func TestPackingABacklog(t *testing.T) {
	f := newPackFixture(t)
	t0 := f.now
	f.write(t0, t0.Add(2*time.Minute))
	f.expect("first write", t0, t0, t0.Add(2*time.Minute))
	// Three hours at once: recent takes them all (at or after the watermark), then
	// packing moves the watermark to the target, 30 minutes at a time.
	f.write(t0.Add(2*time.Minute), t0.Add(3*time.Hour+2*time.Minute))
	f.expect("backlog", t0.Add(3*time.Hour), t0, t0.Add(3*time.Hour+2*time.Minute))
	if _, c, _, _ := f.state(); c != 2*36 {
		t.Fatalf("backlog: %d chunks, want %d (both series' 36 buckets)", c, 2*36)
	}
}
