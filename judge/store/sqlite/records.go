package sqlite

import (
	"context"
	"fmt"

	"github.com/binlake/binlake/judge/store"
)

// WriteRecords writes the records in one transaction of the writer connection, synced as
// a Write of points is.
func (s *Store) WriteRecords(ctx context.Context, recs []store.Record) error {
	if err := store.ValidateRecords(recs); err != nil {
		return fmt.Errorf("sqlite store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if len(recs) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite store: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// In multi-row statements prepared once: a burst of placements writes thousands of
	// records. The deletes are fewer (a reservation ends after its TTL or once its node
	// reports the instance), one prepared statement each.
	var puts []store.Record
	del, err := tx.PrepareContext(ctx, `DELETE FROM records WHERE kind = ? AND key = ?`)
	if err != nil {
		return fmt.Errorf("sqlite store: prepare record delete: %w", err)
	}
	defer del.Close()
	for _, r := range recs {
		if len(r.Value) > 0 {
			puts = append(puts, r)
			continue
		}
		if _, err := del.ExecContext(ctx, r.Kind, r.Key); err != nil {
			return fmt.Errorf("sqlite store: delete record %s/%s: %w", r.Kind, r.Key, err)
		}
	}
	err = s.recordsUpsert.exec(ctx, tx, len(puts), func(dst []any, i int) []any {
		return append(dst, puts[i].Kind, puts[i].Key, puts[i].Value)
	})
	if err != nil {
		return fmt.Errorf("sqlite store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: commit records: %w", err)
	}
	return nil
}

// Records reads the records of kind.
func (s *Store) Records(ctx context.Context, kind string) ([]store.Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	rows, err := s.r.QueryContext(ctx, `SELECT key, value FROM records WHERE kind = ?`, kind)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: read records: %w", err)
	}
	defer rows.Close()
	var out []store.Record
	for rows.Next() {
		r := store.Record{Kind: kind}
		if err := rows.Scan(&r.Key, &r.Value); err != nil {
			return nil, fmt.Errorf("sqlite store: read records: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: read records: %w", err)
	}
	return out, nil
}
