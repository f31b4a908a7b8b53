package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/binlake/binlake/judge/store"
)

// rowsPerInsert is how many rows one INSERT statement carries: multi-row statements cut
// the per-row cost of the statement machinery (3 parameters per row, far below SQLite's
// limit of 32,766).
const rowsPerInsert = 500

// futureMS is how far ahead of the clock a point still goes to recent. A node whose clock
// runs ahead must not keep its points in recent (and memory) until their time comes:
// they are merged into their chunks at once, like late points.
const futureMS = 60 * 60 * 1000

// Write validates every point first, so that a bad batch stores nothing, then stores
// them in one transaction: points at or after the watermark into recent, older ones, and
// ones more than futureMS ahead of the clock, merged into their chunks. A point with the identity of a stored one replaces it. The
// rows are built before the transaction starts, so that a second writer prepares its
// batch while the first one inserts. Packing, when due, follows in transactions of its
// own; if it fails the points are stored all the same, the failure is logged, and the
// next write tries again.
func (s *Store) Write(ctx context.Context, points []store.Point) error {
	if err := store.ValidatePoints(points); err != nil {
		return fmt.Errorf("sqlite store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if len(points) == 0 {
		return nil
	}
	if err := s.write(ctx, s.ids.resolve(points)); err != nil {
		return err
	}
	if err := s.pack(ctx); err != nil {
		s.log.Warn("packing recent points into chunks failed; the next write retries", "err", err)
	}
	return nil
}

func (s *Store) write(ctx context.Context, rs rows) error {
	s.recent.mu.Lock()
	defer s.recent.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite store: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	created, err := rs.createSeries(ctx, tx, s.seriesInsert)
	if err != nil {
		return err
	}
	fresh := make([]row, 0, len(rs.rows))
	var late []row
	future := s.now().UnixMilli() + futureMS
	for _, r := range rs.rows {
		if r.ms < s.recent.watermark || r.ms >= future {
			late = append(late, r)
		} else {
			fresh = append(fresh, r)
		}
	}
	err = s.recentInsert.exec(ctx, tx, len(fresh), func(dst []any, i int) []any {
		return append(dst, fresh[i].id, fresh[i].ms, fresh[i].v)
	})
	if err != nil {
		return fmt.Errorf("sqlite store: %w", err)
	}
	if err := mergeLate(ctx, tx, late); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: commit: %w", err)
	}
	s.recent.add(fresh)
	s.ids.remember(created)
	return nil
}

// chunkKey names one chunk.
type chunkKey struct{ series, bucket int64 }

// mergeLate merges rows older than the watermark into their chunks, one read and one
// write per chunk touched.
func mergeLate(ctx context.Context, tx *sql.Tx, rs []row) error {
	if len(rs) == 0 {
		return nil
	}
	byChunk := map[chunkKey][]sample{}
	var order []chunkKey
	for _, r := range rs {
		k := chunkKey{r.id, bucketOf(r.ms)}
		if _, ok := byChunk[k]; !ok {
			order = append(order, k)
		}
		byChunk[k] = append(byChunk[k], sample{r.ms, r.v})
	}
	for _, k := range order {
		var old []sample
		var data []byte
		err := tx.QueryRowContext(ctx, `SELECT data FROM chunks WHERE series = ? AND bucket = ?`, k.series, k.bucket).Scan(&data)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("sqlite store: read chunk: %w", err)
		default:
			if old, err = decodeChunk(nil, k.bucket, data); err != nil {
				return fmt.Errorf("sqlite store: series %d: %w", k.series, err)
			}
		}
		merged := mergeSamples(old, byChunk[k])
		if _, err := tx.ExecContext(ctx, `INSERT INTO chunks (series, bucket, data) VALUES (?, ?, ?)
			ON CONFLICT (series, bucket) DO UPDATE SET data = excluded.data`,
			k.series, k.bucket, encodeChunk(nil, k.bucket, merged)); err != nil {
			return fmt.Errorf("sqlite store: write chunk: %w", err)
		}
	}
	return nil
}
