// Package sqlite is the embedded store.Store: one SQLite file in WAL mode through
// modernc.org/sqlite (pure Go, no cgo).
//
// Points live in one table keyed by (node, name, labels, ts) — the series identity plus
// time — so a query for one series over a time range is one index range scan, and a
// rewritten point replaces the old one instead of counting twice. Timestamps are Unix
// milliseconds, as in the Elasticsearch store. P95 is exact and computed in SQL: a window
// function picks the two values around rank 0.95·(n−1) and Go interpolates between them
// (store.P95's definition).
//
// Writes go through one connection (SQLite has one writer; WAL lets readers proceed
// beside it), reads through a small pool of read-only connections.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/binlake/binlake/judge/store"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options configures the store.
type Options struct {
	// Path is the database file; it is created when missing. Its directory must exist.
	Path string
	// ReadConns bounds the read-only connections (default 4).
	ReadConns int
}

// Store is the SQLite store. It is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex // held shared by every operation, exclusively by Close
	closed bool
	w      *sql.DB // one connection: SQLite serialises writers anyway
	r      *sql.DB
}

var _ store.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS points (
	node   TEXT    NOT NULL,
	name   TEXT    NOT NULL,
	labels TEXT    NOT NULL, -- store.LabelKey: '' for node-level series
	ts     INTEGER NOT NULL, -- Unix milliseconds, UTC
	value  REAL    NOT NULL,
	PRIMARY KEY (node, name, labels, ts)
) WITHOUT ROWID;
-- Nodes and DeleteBefore select by time alone.
CREATE INDEX IF NOT EXISTS points_ts ON points (ts);
PRAGMA user_version = 1;
`

// rowsPerInsert is how many rows one INSERT statement carries; multi-row statements
// cut the per-row cost of the statement machinery (5 parameters each, far below
// SQLite's limit).
const rowsPerInsert = 100

// Open opens or creates the database at opts.Path.
func Open(opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("sqlite store: path is empty")
	}
	if strings.ContainsAny(opts.Path, "?#") || opts.Path == ":memory:" {
		// The driver reads parameters after '?', and a memory database is private to
		// each connection, so the reader pool would not see the writer's data.
		return nil, fmt.Errorf("sqlite store: path %q: must be a file path without '?' or '#'", opts.Path)
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	base := "file:" + opts.Path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	w, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", opts.Path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	if _, err := w.Exec(schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite store: create schema in %s: %w", opts.Path, err)
	}
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite store: open %s for reading: %w", opts.Path, err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	return &Store{w: w, r: r}, nil
}

// Write validates every point first, so that a bad batch stores nothing, then inserts
// them in one transaction. A point with the identity of a stored one replaces it.
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
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite store: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var many, one *sql.Stmt
	args := make([]any, 0, 5*rowsPerInsert)
	for len(points) > 0 {
		n := min(len(points), rowsPerInsert)
		stmt := &many
		if n < rowsPerInsert {
			stmt, n = &one, 1
		}
		if *stmt == nil {
			if *stmt, err = tx.PrepareContext(ctx, insertSQL(n)); err != nil {
				return fmt.Errorf("sqlite store: prepare insert: %w", err)
			}
		}
		args = args[:0]
		for _, p := range points[:n] {
			args = append(args, p.Node, p.Name, store.LabelKey(p.Labels), p.TS.UnixMilli(), p.Value)
		}
		if _, err := (*stmt).ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("sqlite store: insert: %w", err)
		}
		points = points[n:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: commit: %w", err)
	}
	return nil
}

func insertSQL(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO points (node, name, labels, ts, value) VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?)")
	}
	b.WriteString(" ON CONFLICT (node, name, labels, ts) DO UPDATE SET value = excluded.value")
	return b.String()
}

// series is the WHERE clause selecting q's points; its arguments come from seriesArgs.
const series = `node = ? AND name = ? AND labels = ? AND ts >= ? AND ts < ?`

func seriesArgs(q store.Query) []any {
	return []any{q.Node, q.Name, store.LabelKey(q.Labels), q.From.UnixMilli(), q.To.UnixMilli()}
}

// hourExpr is the UTC hour of day of ts (non-negative: Point.Validate rejects pre-1970).
const hourExpr = `(ts / 3600000) % 24`

// Stats returns count, avg, max and the exact p95 of the series.
func (s *Store) Stats(ctx context.Context, q store.Query) (store.Stats, error) {
	prof, err := s.grouped(ctx, q, "0")
	if err != nil {
		return store.Stats{}, err
	}
	return prof[0], nil
}

// Profile returns the statistics of the series per UTC hour of the day.
func (s *Store) Profile(ctx context.Context, q store.Query) (store.HourProfile, error) {
	return s.grouped(ctx, q, hourExpr)
}

// grouped computes the statistics of q's points grouped by the SQL expression group,
// whose values must lie in 0–23. Both queries run in one read transaction, so that they
// see the same snapshot while writers go on.
func (s *Store) grouped(ctx context.Context, q store.Query, group string) (store.HourProfile, error) {
	var prof store.HourProfile
	if err := q.Validate(); err != nil {
		return prof, fmt.Errorf("sqlite store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return prof, store.ErrClosed
	}
	if !q.From.Before(q.To) {
		return prof, nil
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return prof, fmt.Errorf("sqlite store: begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	rows, err := tx.QueryContext(ctx, `SELECT `+group+` AS g, COUNT(*), AVG(value), MAX(value)
		FROM points WHERE `+series+` GROUP BY g`, seriesArgs(q)...)
	if err != nil {
		return prof, fmt.Errorf("sqlite store: aggregate %s/%s: %w", q.Node, q.Name, err)
	}
	for rows.Next() {
		var g int
		var st store.Stats
		if err := rows.Scan(&g, &st.Count, &st.Avg, &st.Max); err != nil {
			rows.Close()
			return prof, fmt.Errorf("sqlite store: scan aggregate: %w", err)
		}
		prof[g] = st
	}
	if err := rows.Close(); err != nil {
		return prof, fmt.Errorf("sqlite store: aggregate %s/%s: %w", q.Node, q.Name, err)
	}

	// The values at ranks floor(h) and floor(h)+1 of each group, h = 0.95·(n−1); SQLite
	// and Go compute h with the same IEEE product, so they agree on the floor.
	rows, err = tx.QueryContext(ctx, `SELECT g, rn, value FROM (
			SELECT g, value,
				ROW_NUMBER() OVER (PARTITION BY g ORDER BY value) - 1 AS rn,
				CAST((COUNT(*) OVER (PARTITION BY g) - 1) * 0.95 AS INTEGER) AS lo
			FROM (SELECT `+group+` AS g, value FROM points WHERE `+series+`)
		) WHERE rn = lo OR rn = lo + 1`, seriesArgs(q)...)
	if err != nil {
		return prof, fmt.Errorf("sqlite store: p95 %s/%s: %w", q.Node, q.Name, err)
	}
	defer rows.Close()
	var at [24][2]float64
	for rows.Next() {
		var g, rn int
		var v float64
		if err := rows.Scan(&g, &rn, &v); err != nil {
			return prof, fmt.Errorf("sqlite store: scan p95: %w", err)
		}
		h := float64(prof[g].Count-1) * 0.95
		at[g][rn-int(math.Floor(h))] = v
	}
	if err := rows.Err(); err != nil {
		return prof, fmt.Errorf("sqlite store: p95 %s/%s: %w", q.Node, q.Name, err)
	}
	for g := range prof {
		n := prof[g].Count
		if n == 0 {
			continue
		}
		h := float64(n-1) * 0.95
		lo := math.Floor(h)
		if int64(lo) >= n-1 {
			prof[g].P95 = at[g][0]
		} else {
			prof[g].P95 = at[g][0] + (h-lo)*(at[g][1]-at[g][0])
		}
	}
	return prof, nil
}

// Nodes lists the nodes with a point in [from, to), sorted.
func (s *Store) Nodes(ctx context.Context, from, to time.Time) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT node FROM points WHERE ts >= ? AND ts < ? ORDER BY node`,
		from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("sqlite store: nodes: %w", err)
	}
	defer rows.Close()
	var nodes []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlite store: scan node: %w", err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: nodes: %w", err)
	}
	return nodes, nil
}

// DeleteBefore removes the points older than t.
func (s *Store) DeleteBefore(ctx context.Context, t time.Time) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM points WHERE ts < ?`, t.UnixMilli()); err != nil {
		return fmt.Errorf("sqlite store: delete before %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// Close waits for running operations and closes the database. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(s.r.Close(), s.w.Close())
}
