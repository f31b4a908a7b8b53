package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// pointKey is a point's identity and value as one comparable string.
func pointKey(p store.Point) string {
	return fmt.Sprintf("%s|%s|%s|%d|%v", p.Node, p.Name, metric.LabelSetKey(p.Labels), p.TS.UnixMilli(), p.Value)
}

// scanned is what one Scan delivered.
type scanned struct {
	chunks int
	points []store.Point // of the subtest's own nodes
}

// scanAll runs Scan over [from, to) and checks what holds for any data: no empty chunk,
// times in the range and never decreasing, across chunks and nodes.
func scanAll(t *testing.T, s store.Store, prefix string, from, to time.Time) scanned {
	t.Helper()
	var out scanned
	var last time.Time
	err := s.Scan(ctxFor(t), from, to, func(chunk []store.Point) error {
		out.chunks++
		if len(chunk) == 0 {
			return errors.New("an empty chunk")
		}
		for _, p := range chunk {
			if p.TS.Before(from) || !p.TS.Before(to) {
				return fmt.Errorf("point %s outside [%s, %s)", pointKey(p), from, to)
			}
			if p.TS.Before(last) {
				return fmt.Errorf("point %s after one at %s: times decrease", pointKey(p), last)
			}
			last = p.TS
			if strings.HasPrefix(p.Node, prefix) {
				out.points = append(out.points, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan [%s, %s): %v", from, to, err)
	}
	return out
}

func (r *run) scan(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	nodes := []string{p + "a", p + "b", p + "c"}
	// 20 hours across midnight every 2 minutes: 9,000 points, more than one chunk of
	// every store, written out of order.
	from := r.day(90).Add(14 * time.Hour)
	to := from.Add(20 * time.Hour)
	pts := gen(rand.New(rand.NewPCG(13, 14)), nodes, from, to, 2*time.Minute)
	rand.New(rand.NewPCG(15, 16)).Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
	for chunk := range slices.Chunk(pts, 1000) {
		if err := s.Write(ctx, chunk); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	// A point written again with another value is delivered once, with the new value.
	pts[0].Value = -1
	if err := s.Write(ctx, pts[:1]); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	refresh(t, ctx, s)

	for _, rg := range []struct {
		name     string
		from, to time.Time
	}{
		{"all", from, to},
		{"wider", from.Add(-24 * time.Hour), to.Add(24 * time.Hour)},
		// Bounds on points: From is included, To excluded.
		{"part", from.Add(2 * time.Hour), to.Add(-3 * time.Hour)},
		{"one time", from.Add(time.Hour), from.Add(time.Hour + time.Millisecond)},
	} {
		got := scanAll(t, s, p, rg.from, rg.to)
		var want []string
		for _, pt := range pts {
			if !pt.TS.Before(rg.from) && pt.TS.Before(rg.to) {
				want = append(want, pointKey(pt))
			}
		}
		var have []string
		for _, pt := range got.points {
			have = append(have, pointKey(pt))
		}
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(have, want) {
			t.Errorf("%s: scan delivered %d points of the subtest's nodes, want %d (first difference: %s)",
				rg.name, len(have), len(want), firstDifference(have, want))
		}
		if len(want) > 5000 && got.chunks < 2 {
			t.Errorf("%s: %d points in %d chunk, want them in chunks", rg.name, len(have), got.chunks)
		}
	}

	// Empty and inverted ranges call fn never.
	for _, rg := range [][2]time.Time{{from, from}, {to, from}, {to.Add(time.Hour), to.Add(2 * time.Hour)}} {
		err := s.Scan(ctx, rg[0], rg[1], func(chunk []store.Point) error {
			return fmt.Errorf("fn called with %d points", len(chunk))
		})
		if err != nil {
			t.Errorf("scan [%s, %s): %v", rg[0], rg[1], err)
		}
	}

	// fn's first error ends the scan and comes back.
	stop := errors.New("stop here")
	calls := 0
	err := s.Scan(ctx, from, to, func([]store.Point) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("scan with a failing fn: %v after %d calls, want the fn's error after 1 call", err, calls)
	}
}

// firstDifference describes where two sorted lists first differ.
func firstDifference(have, want []string) string {
	for i := range min(len(have), len(want)) {
		if have[i] != want[i] {
			return fmt.Sprintf("have %s, want %s", have[i], want[i])
		}
	}
	if len(have) > len(want) {
		return "extra " + have[len(want)]
	}
	if len(want) > len(have) {
		return "missing " + want[len(have)]
	}
	return "none"
}
