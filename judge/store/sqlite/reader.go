package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/binlake/binlake/judge/store"
)

// Reader reads a store's file beside the process that writes it (a running judge or
// binlake up), which it never changes: no schema is created or converted, no point
// packed. The writer keeps the newest points' index in its memory, so a Reader reads
// them from the table, in the same transaction as the chunks: each call sees the file as
// one commit left it. `binlake alarm test -data` replays a store's history with it.
type Reader struct {
	db   *sql.DB
	path string
}

// OpenReader opens the store file at path, which must exist and hold a store of this
// schema version, for reading.
func OpenReader(path string) (*Reader, error) {
	if path == "" || strings.ContainsAny(path, "?#") || path == ":memory:" {
		return nil, fmt.Errorf("sqlite store: path %q: must be a file path without '?' or '#'", path)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	// Read-only connections: WAL lets them read beside the writer; query_only keeps
	// even a mistaken statement from writing.
	db, err := sql.Open("sqlite", "file:"+uriPath.Replace(path)+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(2)
	var version int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store: %s: %w", path, err)
	}
	switch {
	case version == 0:
		db.Close()
		return nil, fmt.Errorf("sqlite store: %s is not a judge store (no schema)", path)
	case version != 2:
		db.Close()
		return nil, fmt.Errorf("sqlite store: %s has schema version %d, which this binary reads only after a judge of its version opened it (it reads 2)", path, version)
	}
	return &Reader{db: db, path: path}, nil
}

// Scan is store.Store's Scan, on the file as one commit left it.
func (r *Reader) Scan(ctx context.Context, from, to time.Time, fn func([]store.Point) error) error {
	lo, hi := max(from.UnixMilli(), 0), to.UnixMilli()
	if lo >= hi {
		return nil
	}
	err := r.read(ctx, func(tx *sql.Tx) error {
		var ri recentIndex
		if err := ri.load(ctx, tx); err != nil { // the first read: it fixes the state
			return err
		}
		return scan(ctx, tx, ri.inRange(lo, hi), lo, hi, fn, func() {})
	})
	if err != nil {
		return fmt.Errorf("sqlite store: %s: scan: %w", r.path, err)
	}
	return nil
}

// Names lists the metric names the store holds series of, sorted.
func (r *Reader) Names(ctx context.Context) ([]string, error) {
	var out []string
	err := r.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = names(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %s: %w", r.path, err)
	}
	return out, nil
}

func (r *Reader) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	return fn(tx)
}

// Close releases the file.
func (r *Reader) Close() error { return r.db.Close() }

// Names lists the metric names the store holds series of, sorted: every name ever
// written (retention removes points, not series).
func (s *Store) Names(ctx context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	out, err := names(ctx, s.r)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: names: %w", err)
	}
	return out, nil
}

func names(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT name FROM series ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
