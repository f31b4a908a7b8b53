package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
)

// recentIndex is recent's points in memory, by series: the table is a log in write
// order, which is what makes appending cheap, but queries, Scan and packing need the
// points by series and time, with a rewritten point's newer value. It holds up to some
// 36 minutes of points (packSpan and the minute behind the newest), at most about
// maxRecentPoints, 16 bytes each.
//
// Everything that changes recent or chunks (writes, packing, retention) holds mu for
// its whole transaction and updates the index only once the transaction committed;
// queries hold mu shared while they read chunks and the index, so they never see a
// point in both or in neither.
type recentIndex struct {
	mu        sync.RWMutex
	bySeries  map[int64][]sample // sorted by time, distinct times
	watermark int64              // W: points with ts < W are in chunks, the others in recent
	newest    int64              // the newest time written to recent
	points    int                // how many points bySeries holds
}

// querier is a connection pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// load reads the table and the watermark; at Open, before any other use (or, for a
// Reader, into an index of its own within the read's transaction).
func (ri *recentIndex) load(ctx context.Context, db querier) error {
	ri.bySeries, ri.points = map[int64][]sample{}, 0
	if err := db.QueryRowContext(ctx, `SELECT ms FROM watermark`).Scan(&ri.watermark); err != nil {
		return fmt.Errorf("read watermark: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT ts, series, value FROM recent ORDER BY rowid`)
	if err != nil {
		return fmt.Errorf("load recent points: %w", err)
	}
	defer rows.Close()
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.ms, &r.id, &r.v); err != nil {
			return fmt.Errorf("load recent points: %w", err)
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load recent points: %w", err)
	}
	ri.add(rs)
	return nil
}

// add records rows written to recent; mu is held.
func (ri *recentIndex) add(rs []row) {
	for _, r := range rs {
		ri.newest = max(ri.newest, r.ms)
		ss := ri.bySeries[r.id]
		if n := len(ss); n == 0 || ss[n-1].ms < r.ms { // the usual case: the newest point
			ri.bySeries[r.id] = append(ss, sample{r.ms, r.v})
			ri.points++
			continue
		}
		i, found := slices.BinarySearchFunc(ss, r.ms, byTime)
		if found {
			ss[i].v = r.v
			continue
		}
		ri.bySeries[r.id] = slices.Insert(ss, i, sample{r.ms, r.v})
		ri.points++
	}
}

func byTime(s sample, ms int64) int { return cmp.Compare(s.ms, ms) }

// oldest returns the time of the oldest point, false when there is none; mu is held.
func (ri *recentIndex) oldest() (int64, bool) {
	var min int64
	ok := false
	for _, ss := range ri.bySeries {
		if len(ss) > 0 && (!ok || ss[0].ms < min) {
			min, ok = ss[0].ms, true
		}
	}
	return min, ok
}

// before returns each series' points before ms (slices of the index, valid until the
// next change); mu is held.
func (ri *recentIndex) before(ms int64) map[int64][]sample {
	out := map[int64][]sample{}
	for id, ss := range ri.bySeries {
		if i, _ := slices.BinarySearchFunc(ss, ms, byTime); i > 0 {
			out[id] = ss[:i]
		}
	}
	return out
}

// dropBefore forgets the points before ms; mu is held.
func (ri *recentIndex) dropBefore(ms int64) {
	for id, ss := range ri.bySeries {
		i, _ := slices.BinarySearchFunc(ss, ms, byTime)
		ri.points -= i
		switch {
		case i == len(ss):
			delete(ri.bySeries, id)
		case i > 0:
			ri.bySeries[id] = slices.Clone(ss[i:]) // let the old array go
		}
	}
}

// inRange returns the points of every series in [lo, hi), sorted by time; mu is held
// shared.
func (ri *recentIndex) inRange(lo, hi int64) []scanPoint {
	var out []scanPoint
	for id := range ri.bySeries {
		for _, sm := range ri.series(id, lo, hi) {
			out = append(out, scanPoint{sm.ms, id, sm.v})
		}
	}
	slices.SortFunc(out, func(a, b scanPoint) int { return cmp.Compare(a.ms, b.ms) })
	return out
}

// series returns the points of one series in [lo, hi); mu is held shared.
func (ri *recentIndex) series(id, lo, hi int64) []sample {
	ss := ri.bySeries[id]
	i, _ := slices.BinarySearchFunc(ss, lo, byTime)
	j, _ := slices.BinarySearchFunc(ss, hi, byTime)
	return ss[i:max(i, j)]
}
