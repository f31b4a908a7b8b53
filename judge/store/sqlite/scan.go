package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// scanChunk is how many points Scan hands fn at a time.
const scanChunk = 4096

// seriesInfo is what Scan knows of a series: its strings and decoded labels, shared by
// all of its points.
type seriesInfo struct {
	node, name string
	labels     map[string]string
}

// scanPoint is a point on its way to fn.
type scanPoint struct {
	ms, series int64
	v          float64
}

// Scan reads, in one read transaction, the chunks of [from, to) bucket by bucket, with
// recent's points of each bucket (copied from the index as the transaction began, so
// that both show one state of the store), each bucket's points sorted by time.
func (s *Store) Scan(ctx context.Context, from, to time.Time, fn func([]store.Point) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	lo, hi := max(from.UnixMilli(), 0), to.UnixMilli()
	if lo >= hi {
		return nil
	}
	err := s.read(ctx, func(tx *sql.Tx) error {
		s.recent.mu.RLock()
		recent := s.recent.inRange(lo, hi)
		// The transaction's first read (of the series, in scan) fixes the state it
		// sees: one with no change after the copy above.
		return scan(ctx, tx, recent, lo, hi, fn, s.recent.mu.RUnlock)
	})
	if err != nil {
		return fmt.Errorf("sqlite store: scan: %w", err)
	}
	return nil
}

// scan delivers the points of [lo, hi) of chunks, read through tx, and of recent (that
// range of recent's points, in time order). fixed is called once the transaction's first
// read fixed the state it sees.
func scan(ctx context.Context, tx *sql.Tx, recent []scanPoint, lo, hi int64, fn func([]store.Point) error, fixed func()) error {
	sc := scanner{tx: tx, fn: fn, out: make([]store.Point, 0, scanChunk), recent: recent}
	err := sc.loadSeries(ctx)
	fixed()
	if err != nil {
		return err
	}
	if err := sc.buckets(ctx, lo, hi); err != nil {
		return err
	}
	return sc.flush()
}

// scanner hands points to fn, scanChunk at a time.
type scanner struct {
	tx     *sql.Tx
	fn     func([]store.Point) error
	series map[int64]seriesInfo
	recent []scanPoint // recent's points of the range, in time order, not yet emitted
	out    []store.Point
}

func (sc *scanner) loadSeries(ctx context.Context) error {
	rows, err := sc.tx.QueryContext(ctx, `SELECT id, node, name, labels FROM series`)
	if err != nil {
		return err
	}
	defer rows.Close()
	sc.series = map[int64]seriesInfo{}
	for rows.Next() {
		var id int64
		var info seriesInfo
		var labels string
		if err := rows.Scan(&id, &info.node, &info.name, &labels); err != nil {
			return err
		}
		var err error
		if info.labels, err = metric.ParseLabelSetKey(labels); err != nil {
			return fmt.Errorf("series %s/%s: %w", info.node, info.name, err)
		}
		sc.series[id] = info
	}
	return rows.Err()
}

// buckets emits the points of [lo, hi) bucket by bucket: the next bucket is the first
// one with a chunk (one index probe) or with a point of recent.
func (sc *scanner) buckets(ctx context.Context, lo, hi int64) error {
	var pts []scanPoint
	for b, last := bucketOf(lo), bucketOf(hi-1); b <= last; b++ {
		var next sql.NullInt64
		if err := sc.tx.QueryRowContext(ctx, `SELECT min(bucket) FROM chunks WHERE bucket >= ? AND bucket <= ?`, b, last).Scan(&next); err != nil {
			return err
		}
		switch {
		case len(sc.recent) > 0 && (!next.Valid || bucketOf(sc.recent[0].ms) < next.Int64):
			b = bucketOf(sc.recent[0].ms)
		case next.Valid:
			b = next.Int64
		default:
			return nil
		}
		pts = pts[:0]
		err := eachChunk(ctx, sc.tx, `SELECT series, bucket, data FROM chunks WHERE bucket = ?`, []any{b},
			func(id, _ int64, samples []sample) {
				for _, sm := range samples {
					if sm.ms >= lo && sm.ms < hi {
						pts = append(pts, scanPoint{sm.ms, id, sm.v})
					}
				}
			})
		if err != nil {
			return err
		}
		for len(sc.recent) > 0 && bucketOf(sc.recent[0].ms) == b {
			pts = append(pts, sc.recent[0])
			sc.recent = sc.recent[1:]
		}
		// By time; a point both in a chunk and in recent (see newerWins) once: recent's,
		// which the stable sort keeps after the chunk's.
		slices.SortStableFunc(pts, func(a, b scanPoint) int {
			return cmp.Or(cmp.Compare(a.ms, b.ms), cmp.Compare(a.series, b.series))
		})
		for i, p := range pts {
			if i+1 < len(pts) && pts[i+1].ms == p.ms && pts[i+1].series == p.series {
				continue
			}
			if err := sc.emit(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (sc *scanner) emit(p scanPoint) error {
	info, ok := sc.series[p.series]
	if !ok {
		return fmt.Errorf("point at %d of unknown series %d", p.ms, p.series)
	}
	sc.out = append(sc.out, store.Point{Node: info.node, Name: info.name, Labels: info.labels,
		TS: time.UnixMilli(p.ms).UTC(), Value: p.v})
	if len(sc.out) == scanChunk {
		return sc.flush()
	}
	return nil
}

func (sc *scanner) flush() error {
	if len(sc.out) == 0 {
		return nil
	}
	err := sc.fn(sc.out)
	sc.out = sc.out[:0]
	return err
}
