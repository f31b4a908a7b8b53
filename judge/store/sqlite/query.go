package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// Stats returns count, avg, max and the exact p95 of the series.
func (s *Store) Stats(ctx context.Context, q store.Query) (store.Stats, error) {
	var vals []float64
	err := s.series(ctx, q, func(_ int64, v float64) { vals = append(vals, v) })
	if err != nil {
		return store.Stats{}, err
	}
	return statsOf(vals), nil
}

// Profile returns the statistics of the series per UTC hour of the day.
func (s *Store) Profile(ctx context.Context, q store.Query) (store.HourProfile, error) {
	var prof store.HourProfile
	var vals [24][]float64
	err := s.series(ctx, q, func(ms int64, v float64) {
		h := ms / 3_600_000 % 24 // non-negative: Point.Validate rejects pre-1970 times
		vals[h] = append(vals[h], v)
	})
	if err != nil {
		return prof, err
	}
	for h := range prof {
		prof[h] = statsOf(vals[h])
	}
	return prof, nil
}

// statsOf summarises values (sorting them).
func statsOf(vals []float64) store.Stats {
	if len(vals) == 0 {
		return store.Stats{}
	}
	slices.Sort(vals)
	var sum float64
	for _, v := range vals {
		sum += v
	}
	return store.Stats{Count: int64(len(vals)), Avg: sum / float64(len(vals)), Max: vals[len(vals)-1], P95: store.P95(vals)}
}

// series hands fn the time and value of every point of q's series in [From, To), from
// chunks, read in one transaction, and from the index of recent, with recent.mu held
// shared throughout so that packing cannot move points between the two reads.
func (s *Store) series(ctx context.Context, q store.Query, fn func(ms int64, v float64)) error {
	if err := q.Validate(); err != nil {
		return fmt.Errorf("sqlite store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	from, to := max(q.From.UnixMilli(), 0), q.To.UnixMilli()
	if from >= to {
		return nil
	}
	what := fmt.Sprintf("%s/%s", q.Node, q.Name)
	s.recent.mu.RLock()
	defer s.recent.mu.RUnlock()
	return s.read(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM series WHERE node = ? AND name = ? AND labels = ?`,
			q.Node, q.Name, metric.LabelSetKey(q.Labels)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sqlite store: %s: %w", what, err)
		}
		var packed []sample // in time order: the chunks come in bucket order
		err = eachChunk(ctx, tx, `SELECT series, bucket, data FROM chunks WHERE series = ? AND bucket >= ? AND bucket <= ? ORDER BY bucket`,
			[]any{id, bucketOf(from), bucketOf(to - 1)}, func(_, _ int64, samples []sample) {
				for _, sm := range samples {
					if sm.ms >= from && sm.ms < to {
						packed = append(packed, sm)
					}
				}
			})
		if err != nil {
			return fmt.Errorf("sqlite store: %s: %w", what, err)
		}
		for _, sm := range newerWins(packed, s.recent.series(id, from, to)) {
			fn(sm.ms, sm.v)
		}
		return nil
	})
}

// newerWins merges a series' samples from chunks and from recent, both in time order. A
// time in both is a point that came from the future into a chunk and was written again
// into recent since: recent holds the newer value.
func newerWins(packed, recent []sample) []sample {
	if len(recent) == 0 {
		return packed
	}
	out := make([]sample, 0, len(packed)+len(recent))
	i := 0
	for _, r := range recent {
		for i < len(packed) && packed[i].ms < r.ms {
			out = append(out, packed[i])
			i++
		}
		if i < len(packed) && packed[i].ms == r.ms {
			i++
		}
		out = append(out, r)
	}
	return append(out, packed[i:]...)
}

// read runs fn in a read transaction, so that it sees one state of the file.
func (s *Store) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite store: begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	return fn(tx)
}

// eachChunk runs query, which selects (series, bucket, data) of chunks, and hands fn each
// chunk's series and samples. The samples slice is reused for the next chunk.
func eachChunk(ctx context.Context, tx *sql.Tx, query string, args []any, fn func(series, bucket int64, samples []sample)) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var samples []sample
	for rows.Next() {
		var id, bucket int64
		var data sql.RawBytes
		if err := rows.Scan(&id, &bucket, &data); err != nil {
			return err
		}
		if samples, err = decodeChunk(samples[:0], bucket, data); err != nil {
			return fmt.Errorf("series %d: %w", id, err)
		}
		fn(id, bucket, samples)
	}
	return rows.Err()
}

// Nodes lists the nodes with a point in [from, to), sorted.
func (s *Store) Nodes(ctx context.Context, from, to time.Time) ([]string, error) {
	var nodes []string
	err := s.withPoints(ctx, from, to, "", func(node, _ string) error {
		nodes = append(nodes, node)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite store: nodes: %w", err)
	}
	slices.Sort(nodes)
	return slices.Compact(nodes), nil
}

// Series lists the series named name with a point in [from, to), sorted by node, then
// labels.
func (s *Store) Series(ctx context.Context, name string, from, to time.Time) ([]store.SeriesKey, error) {
	var out []store.SeriesKey
	err := s.withPoints(ctx, from, to, name, func(node, labels string) error {
		l, err := metric.ParseLabelSetKey(labels)
		if err != nil {
			return fmt.Errorf("series of node %q: %w", node, err)
		}
		out = append(out, store.SeriesKey{Node: node, Labels: l})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite store: series %s: %w", name, err)
	}
	store.SortSeries(out)
	return out, nil
}

// withPoints calls fn with the node and label key of every series (named name; every
// series when name is empty) with a point in [from, to): a point of recent in the range,
// a chunk of a bucket wholly inside it (a chunk is never empty), or a point in range in
// a chunk of a bucket it covers in part.
func (s *Store) withPoints(ctx context.Context, from, to time.Time, name string, fn func(node, labels string) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	lo, hi := max(from.UnixMilli(), 0), to.UnixMilli()
	if lo >= hi {
		return nil
	}
	found := map[int64]bool{}
	s.recent.mu.RLock()
	defer s.recent.mu.RUnlock()
	for id := range s.recent.bySeries {
		if len(s.recent.series(id, lo, hi)) > 0 {
			found[id] = true
		}
	}
	// The series table's filter: every series, or those named name.
	named, andNamed, args := "", "", []any{}
	if name != "" {
		named, andNamed, args = " WHERE name = ?", " AND name = ?", []any{name}
	}
	return s.read(ctx, func(tx *sql.Tx) error {
		add := func(query string, args ...any) error {
			rows, err := tx.QueryContext(ctx, query, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				found[id] = true
			}
			return rows.Err()
		}
		first, end := (lo+bucketMS-1)/bucketMS, hi/bucketMS // the buckets wholly inside
		if first < end {
			// One probe of the primary key per series: the buckets may hold millions of
			// chunks, the series are few.
			if err := add(`SELECT id FROM series WHERE EXISTS
				(SELECT 1 FROM chunks WHERE chunks.series = series.id AND bucket >= ? AND bucket < ?)`+andNamed,
				append([]any{first, end}, args...)...); err != nil {
				return err
			}
		}
		for _, b := range partlyCovered(lo, hi, first, end) {
			err := eachChunk(ctx, tx, `SELECT series, bucket, data FROM chunks WHERE bucket = ?`, []any{b},
				func(id, _ int64, samples []sample) {
					if slices.ContainsFunc(samples, func(sm sample) bool { return sm.ms >= lo && sm.ms < hi }) {
						found[id] = true
					}
				})
			if err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, node, labels FROM series`+named, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var node, labels string
			if err := rows.Scan(&id, &node, &labels); err != nil {
				return err
			}
			if found[id] {
				if err := fn(node, labels); err != nil {
					return err
				}
			}
		}
		return rows.Err()
	})
}

// [first, end) it covers wholly.
func partlyCovered(lo, hi, first, end int64) []int64 {
	var out []int64
	for _, b := range []int64{bucketOf(lo), bucketOf(hi - 1)} {
		if (b < first || b >= end) && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// DeleteBefore removes the points older than t: the chunks of whole buckets before t, the
// older part of the bucket that contains t, and recent's points before t. The series rows
// stay (a few bytes per series ever seen): the writer's id cache refers to them.
func (s *Store) DeleteBefore(ctx context.Context, t time.Time) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	ms := t.UnixMilli()
	if ms <= 0 {
		return nil
	}
	if err := s.deleteBefore(ctx, ms); err != nil {
		return fmt.Errorf("sqlite store: delete before %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	return nil
}

func (s *Store) deleteBefore(ctx context.Context, ms int64) error {
	s.recent.mu.Lock()
	defer s.recent.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	b := bucketOf(ms)
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE bucket < ?`, b); err != nil {
		return err
	}
	// The bucket that contains ms: keep each chunk's points from ms on.
	kept := map[int64][]byte{} // series → remaining data, nil when nothing remains
	err = eachChunk(ctx, tx, `SELECT series, bucket, data FROM chunks WHERE bucket = ?`, []any{b},
		func(id, _ int64, samples []sample) {
			i, _ := slices.BinarySearchFunc(samples, ms, func(sm sample, ms int64) int { return cmp.Compare(sm.ms, ms) })
			if i > 0 {
				kept[id] = encodeChunk(nil, b, samples[i:])
			}
		})
	if err != nil {
		return err
	}
	for id, data := range kept {
		if len(data) == 0 {
			_, err = tx.ExecContext(ctx, `DELETE FROM chunks WHERE series = ? AND bucket = ?`, id, b)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE chunks SET data = ? WHERE series = ? AND bucket = ?`, data, id, b)
		}
		if err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM recent WHERE ts < ?`, ms); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.recent.dropBefore(ms)
	return nil
}
