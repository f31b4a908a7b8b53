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
	for _, r := range recs {
		if len(r.Value) == 0 {
			_, err = tx.ExecContext(ctx, `DELETE FROM records WHERE kind = ? AND key = ?`, r.Kind, r.Key)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO records (kind, key, value) VALUES (?, ?, ?)
				ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value`, r.Kind, r.Key, r.Value)
		}
		if err != nil {
			return fmt.Errorf("sqlite store: write record %s/%s: %w", r.Kind, r.Key, err)
		}
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
