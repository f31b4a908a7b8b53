package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
)

// keepMS is how far behind the newest point the watermark stays: a point up to a minute
// late still goes to recent, the cheap way.
const keepMS = 60 * 1000

// packTarget is where the watermark may go now: the start of the bucket a minute before
// the newest point written, or before the clock if that point is in the future (points
// from a wrong clock must not drag the watermark ahead of the points that follow);
// recent.mu is held.
func (s *Store) packTarget() int64 {
	newest := min(s.recent.newest, s.now().UnixMilli())
	return bucketOf(max(newest-keepMS, 0)) * bucketMS
}

// pack moves the points of recent older than packTarget into chunks, one bucket per
// transaction, so that a backlog is packed a bucket's points at a time.
func (s *Store) pack(ctx context.Context) error {
	for {
		done, err := s.packBucket(ctx)
		if err != nil || done {
			return err
		}
	}
}

// packBucket packs the oldest bucket of recent, if it lies before packTarget, and moves
// the watermark past it (or to the target when recent holds nothing before it). It
// reports whether the watermark has reached the target.
func (s *Store) packBucket(ctx context.Context) (bool, error) {
	ri := &s.recent
	ri.mu.Lock()
	defer ri.mu.Unlock()
	target := s.packTarget()
	if ri.watermark >= target {
		return true, nil
	}
	next := target
	oldest, ok := ri.oldest()
	// The watermark is bucket-aligned and every point of recent is at or after it, so
	// the oldest bucket is a whole one.
	packing := ok && oldest < target
	if packing {
		next = (bucketOf(oldest) + 1) * bucketMS
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("pack: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if packing {
		if err := packChunks(ctx, tx, bucketOf(oldest), ri.before(next)); err != nil {
			return false, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM recent WHERE ts < ?`, next); err != nil {
			return false, fmt.Errorf("pack: delete packed points: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE watermark SET ms = ?`, next); err != nil {
		return false, fmt.Errorf("pack: move watermark: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("pack: commit: %w", err)
	}
	ri.dropBefore(next)
	ri.watermark = next
	return next >= target, nil
}

// packChunks writes recent's points of one bucket, by series, as that bucket's chunks. A
// chunk may exist already, of points that came from the future (futureMS): then recent's
// points, the newer writes, are merged into it.
func packChunks(ctx context.Context, tx *sql.Tx, bucket int64, bySeries map[int64][]sample) error {
	existing := map[int64][]sample{}
	err := eachChunk(ctx, tx, `SELECT series, bucket, data FROM chunks WHERE bucket = ?`, []any{bucket},
		func(id int64, samples []sample) { existing[id] = slices.Clone(samples) })
	if err != nil {
		return fmt.Errorf("pack: read chunks of bucket %d: %w", bucket, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO chunks (series, bucket, data) VALUES (?, ?, ?)
		ON CONFLICT (series, bucket) DO UPDATE SET data = excluded.data`)
	if err != nil {
		return fmt.Errorf("pack: prepare: %w", err)
	}
	defer stmt.Close()
	var buf []byte
	// In series order, so that the inserts walk the primary key forward.
	for _, id := range slices.Sorted(maps.Keys(bySeries)) {
		samples := bySeries[id]
		if old, ok := existing[id]; ok {
			samples = mergeSamples(old, samples)
		}
		buf = encodeChunk(buf[:0], bucket, samples)
		if _, err := stmt.ExecContext(ctx, id, bucket, buf); err != nil {
			return fmt.Errorf("pack: write chunk of series %d, bucket %d: %w", id, bucket, err)
		}
	}
	return nil
}
