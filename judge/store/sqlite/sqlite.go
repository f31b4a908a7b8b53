// Package sqlite is the embedded store.Store: one SQLite file in WAL mode through
// modernc.org/sqlite (pure Go, no cgo).
//
// Layout (schema version 2). A B-tree ordered by series dirties one page per series
// that a commit touches, and with thousands of series every commit rewrote thousands
// of pages: that, not SQL, bounded the first layout (one row per point keyed by series
// and time) to some 40,000 points/s. So points are kept in two places, decided by their
// time and the watermark W:
//
//   - recent (series, ts, value): the points with ts ≥ W, as a log in write order, so
//     that an insert appends to the last page. A rewritten point adds a row; the newer
//     one wins.
//   - chunks (series, bucket, data): the points with ts < W, and those that arrived more
//     than an hour ahead of the clock, packed per series and 5-minute bucket into one
//     blob (encodeChunk). A query for one series over a week reads some 2,000
//     consecutive rows of the primary key.
//
// After a write, once recent holds half an hour of whole buckets older than the newest
// point by more than a minute (and not in the future), or a million points, the writer
// packs those buckets into chunks, deletes them from recent and advances W, in one
// transaction (pack.go: a commit dirties a page per series whatever the buckets it
// packs, so it packs several at once); a point that arrives late,
// older than W, or early, is merged into its chunk at once. A point can be in both
// places only if it came early and was written again once its time was near: readers
// then take recent's value, the newer one. The store keeps recent's points in
// memory by series as well (recentIndex), which is what packing and per-series queries
// read. The series table holds each (node, metric name, label set) once under an
// integer id; the store caches it, so a write binds three numbers per point. Timestamps are Unix milliseconds, as in the
// Elasticsearch store. Statistics are computed in Go from the values read, so P95 is
// exactly store.P95. The records table keeps the judge's records (store.Record) by kind
// and key.
//
// Writes go through one connection (SQLite has one writer; WAL lets readers proceed
// beside it), reads through a small pool of read-only connections, each query in one
// read transaction, so that it sees one state of both tables. A file of schema version 1
// (one points table) is converted when opened.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/flock"
	"github.com/binlake/binlake/judge/store"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options configures the store.
type Options struct {
	// Path is the database file; it is created when missing. Its directory must exist.
	Path string
	// ReadConns bounds the read-only connections (default 4).
	ReadConns int
	// Now is the clock that keeps points from the future in recent; time.Now when nil.
	Now func() time.Time
	// Logger gets warnings about packing recent points into chunks; slog.Default() when nil.
	Logger *slog.Logger
}

// Store is the SQLite store. It is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex // held shared by every operation, exclusively by Close
	closed bool
	w      *sql.DB // one connection: SQLite serialises writers anyway
	r      *sql.DB
	lock   *os.File // Path+".lock", held while open (flock)
	now    func() time.Time
	// The prepared INSERTs of points into recent and of new series, and the upserts of
	// packed chunks and of records.
	recentInsert, seriesInsert, chunksUpsert, recordsUpsert *batchInsert
	log                                                     *slog.Logger

	ids    seriesIDs
	recent recentIndex
	// recentBound is how many points recent may hold before packing is due whatever
	// packSpan says: maxRecentPoints (tests lower it).
	recentBound int
}

var _ store.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS series (
	id     INTEGER PRIMARY KEY,
	node   TEXT NOT NULL,
	name   TEXT NOT NULL,
	labels TEXT NOT NULL, -- metric.LabelSetKey: '' for node-level series
	UNIQUE (node, name, labels)
);
-- The log of points at or after the watermark, in write order; a rewritten point's
-- newer row wins (recentIndex). No key, no constraint: an insert appends to the last
-- page and needs no statement journal.
CREATE TABLE IF NOT EXISTS recent (
	series INTEGER, -- series.id
	ts     INTEGER, -- Unix milliseconds, UTC
	value  REAL
);
CREATE TABLE IF NOT EXISTS chunks (
	series INTEGER NOT NULL,
	bucket INTEGER NOT NULL, -- ts / 300000 of every sample in data, all < watermark
	data   BLOB    NOT NULL, -- encodeChunk; never empty
	PRIMARY KEY (series, bucket)
) WITHOUT ROWID;
-- Nodes, Scan and DeleteBefore select chunks by time alone.
CREATE INDEX IF NOT EXISTS chunks_bucket ON chunks (bucket);
CREATE TABLE IF NOT EXISTS watermark (ms INTEGER NOT NULL);
INSERT INTO watermark (ms) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM watermark);
-- The judge's records (store.Record). Created by IF NOT EXISTS in a file of version 2
-- too: a table added, nothing converted, and a judge before it opens the file still.
CREATE TABLE IF NOT EXISTS records (
	kind  TEXT NOT NULL,
	key   TEXT NOT NULL,
	value BLOB NOT NULL,
	PRIMARY KEY (kind, key)
) WITHOUT ROWID;
`

// convertV1 moves the points of schema version 1, where one table held (node, name,
// labels, ts, value) per point, into recent; packing moves them on into chunks.
const convertV1 = `
INSERT INTO series (node, name, labels) SELECT DISTINCT node, name, labels FROM points;
INSERT INTO recent (series, ts, value)
	SELECT s.id, p.ts, p.value FROM points p JOIN series s USING (node, name, labels);
DROP TABLE points;
`

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
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// synchronous(FULL): Write promises durable points (store.Store), and the judge's bus
	// commits a batch's Kafka offset once Write returns. In WAL mode NORMAL syncs the
	// WAL only at checkpoints, so a power loss or kernel crash rolls back the commits
	// since the last one: points Kafka no longer holds. FULL syncs the WAL at every
	// commit: one fsync per Write (its batch, up to 10,000 points from the judge's
	// buffer, is one transaction; packing adds one per 5 minutes of data; BENCHMARKS.md
	// has the cost). The alternative, a checkpoint before acknowledging, costs more: it
	// copies pages into the database file and syncs both files.
	// temp_store(MEMORY): the statement journal of a multi-row insert lives in memory,
	// not in a temporary file written with a system call per page.
	// One process writes a store file: two judges on one file would each take part of
	// the batches (a consumer group's share) and write over each other's records. The
	// readers (OpenReader: alarm replay, bench counts) take no lock.
	lock, err := flock.Take(opts.Path + ".lock")
	if busy := (*flock.Busy)(nil); errors.As(err, &busy) {
		return nil, fmt.Errorf("sqlite store: %s is in use by %s: a store file is one judge's (two would each see part of the batches); stop it, or give this judge a store.sqlite.path of its own", opts.Path, busy.Holder)
	} else if err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	base := "file:" + uriPath.Replace(opts.Path) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=temp_store(MEMORY)"
	w, err := sql.Open("sqlite", base+"&_pragma=cache_size(-32768)&_txlock=immediate")
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("sqlite store: open %s: %w", opts.Path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, lock: lock, now: opts.Now, log: opts.Logger.With("component", "store.sqlite"), recentBound: maxRecentPoints}
	if err := s.init(); err != nil {
		w.Close()
		lock.Close()
		return nil, fmt.Errorf("sqlite store: %s: %w", opts.Path, err)
	}
	s.r, err = sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		lock.Close()
		return nil, fmt.Errorf("sqlite store: open %s for reading: %w", opts.Path, err)
	}
	s.r.SetMaxOpenConns(opts.ReadConns)
	return s, nil
}

// init creates or converts the schema, loads the series ids and the watermark, and packs
// what recent holds of the past (all of a converted file).
func (s *Store) init() error {
	if err := createSchema(s.w); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if err := s.ids.load(s.w); err != nil {
		return err
	}
	ctx := context.Background()
	if err := s.recent.load(ctx, s.w); err != nil {
		return err
	}
	var err error
	s.recentInsert, err = prepareBatchInsert(s.w, "recent (series, ts, value)", "", 3, rowsPerInsert, 100, 20, 5, 1)
	if err == nil {
		s.seriesInsert, err = prepareBatchInsert(s.w, "series (id, node, name, labels)", "", 4, 100, 20, 5, 1)
	}
	if err == nil {
		s.chunksUpsert, err = prepareBatchInsert(s.w, "chunks (series, bucket, data)",
			"ON CONFLICT (series, bucket) DO UPDATE SET data = excluded.data", 3, 200, 20, 5, 1)
	}
	if err == nil {
		s.recordsUpsert, err = prepareBatchInsert(s.w, "records (kind, key, value)",
			"ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value", 3, 100, 20, 5, 1)
	}
	if err != nil {
		s.closeStatements()
		return err
	}
	return s.pack(ctx)
}

// createSchema creates the tables of an empty file, or converts a file of version 1, in
// one transaction.
func createSchema(w *sql.DB) error {
	tx, err := w.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var version int
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version > 2 {
		return fmt.Errorf("schema version %d is newer than this judge's (2)", version)
	}
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	if version == 1 {
		if _, err := tx.Exec(convertV1); err != nil {
			return fmt.Errorf("convert schema version 1: %w", err)
		}
	}
	if _, err := tx.Exec(`PRAGMA user_version = 2`); err != nil {
		return err
	}
	return tx.Commit()
}

// Refresh returns at once: a point is visible to queries when its Write returns.
func (s *Store) Refresh(context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
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
	s.closeStatements()
	return errors.Join(s.r.Close(), s.w.Close(), s.lock.Close())
}

// closeStatements closes the prepared statements (those prepared: a nil one is skipped).
func (s *Store) closeStatements() {
	for _, b := range []*batchInsert{s.recentInsert, s.seriesInsert, s.chunksUpsert, s.recordsUpsert} {
		b.close()
	}
}

// uriPath escapes a '%' in a file name, which the "file:" URI the driver opens would read
// as an escape ("judge.db" under "/srv/50%off" failed to open); '?' and '#' are refused
// before (Open, OpenReader).
var uriPath = strings.NewReplacer("%", "%25")
