package wave

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/rowenc"
)

// A snapshot emits the rows a table already holds as "snapshot" messages (the row
// format, topics and keys of the binlog's rows), while the binlog keeps streaming, so
// that a consumer applying the messages in order ends with the tables' current contents.
// docs/design.md ("Snapshot") explains the technique; in short the capture itself reads
// each chunk of rows by primary key, remembers where the source's binlog ended after the
// read, drops from the chunk every row a binlog event touched since shortly before the
// read (the event carries the newer whole row) and emits the rest once its binlog
// reading reached that end. Progress rides in the offset, so a restart or a failover
// resumes at the last chunk acknowledged.

// Snapshot defaults and bounds.
const (
	DefaultSnapshotChunkRows = 2048
	maxSnapshotChunkRows     = 100_000
	// snapshotGuard is how far before a chunk's read a binlog event's row still
	// replaces the chunk's: a transaction is in the binlog a moment before its rows are
	// visible to other sessions.
	snapshotGuard = 2 * time.Second
)

// SnapshotOptions is the snapshot: section of an instance.
type SnapshotOptions struct {
	// Initial snapshots every subscribed table when the instance first starts (no offset
	// yet), before its binlog from the start position.
	Initial bool `json:"initial,omitempty" yaml:"initial"`
	// ChunkRows is how many rows one read takes (default 2048).
	ChunkRows int `json:"chunk_rows,omitempty" yaml:"chunk_rows"`
	// RowsPerSecond bounds the pace of the snapshot's reads; 0: as fast as the pipeline
	// takes the rows.
	RowsPerSecond int `json:"rows_per_second,omitempty" yaml:"rows_per_second"`
}

func (o *SnapshotOptions) validate() error {
	if o.ChunkRows < 0 || o.ChunkRows > maxSnapshotChunkRows {
		return fmt.Errorf("snapshot.chunk_rows %d: want 1 to %d (0: %d)", o.ChunkRows, maxSnapshotChunkRows, DefaultSnapshotChunkRows)
	}
	if o.RowsPerSecond < 0 {
		return fmt.Errorf("snapshot.rows_per_second %d: want 0 (unbounded) or more", o.RowsPerSecond)
	}
	return nil
}

func (o *SnapshotOptions) chunkRows() int {
	if o == nil || o.ChunkRows == 0 {
		return DefaultSnapshotChunkRows
	}
	return o.ChunkRows
}

// SnapshotRequest asks an instance's leader for a snapshot: the value of
// "instances/<id>/snapshot". A request runs once; a new one needs a new ID.
type SnapshotRequest struct {
	ID string `json:"id"`
	// Tables are "db.table" names, each in a subscription; empty: every subscribed table.
	Tables      []string `json:"tables,omitempty"`
	RequestedAt string   `json:"requested_at,omitempty"`
}

// initialSnapshot is the request ID of the snapshot SnapshotOptions.Initial starts.
const initialSnapshot = "initial"

// SnapshotProgress is how far a snapshot got, carried in the offset (Position.Snapshot)
// so that it resumes where the last acknowledged chunk ended.
type SnapshotProgress struct {
	Request string `json:"request"`
	// Tables are the tables still to read, the one being read first; resolved from the
	// request when the snapshot starts.
	Tables []string `json:"tables,omitempty"`
	// After is the primary key of the last row read from Tables[0]; empty: its start.
	After []KeyValue `json:"after,omitempty"`
	// Rows counts the snapshot's messages' rows emitted so far.
	Rows int64 `json:"rows"`
	// Skipped are the tables the snapshot could not read, each with the reason (no
	// primary key; gone).
	Skipped []string `json:"skipped,omitempty"`
	// Done: every table was read.
	Done      bool   `json:"done,omitempty"`
	StartedAt string `json:"started_at,omitempty"`
}

func (p *SnapshotProgress) active() bool { return p != nil && !p.Done }

// KeyValue is one primary-key column's value, typed so that resuming compares it with
// the column as the server would compare the original (a BIGINT UNSIGNED past 2^53 as
// an integer, bytes as bytes).
type KeyValue struct {
	Int   *int64   `json:"int,omitempty"`
	Uint  *uint64  `json:"uint,omitempty"`
	Float *float64 `json:"float,omitempty"`
	Text  *string  `json:"text,omitempty"`
	Bytes []byte   `json:"bytes,omitempty"` // base64 in JSON
}

// arg is the value as a statement argument.
func (k KeyValue) arg() any {
	switch {
	case k.Int != nil:
		return *k.Int
	case k.Uint != nil:
		return *k.Uint
	case k.Float != nil:
		return *k.Float
	case k.Text != nil:
		return *k.Text
	}
	return k.Bytes
}

// RequestSnapshot asks the leader of instance id to snapshot tables ("db.table"; all
// subscribed tables when empty) and returns the request. The leader picks it up at its
// next poll and source heartbeat (seconds); a snapshot already running is replaced,
// from its start.
func RequestSnapshot(ctx context.Context, c coord.Coordinator, id string, tables []string) (SnapshotRequest, error) {
	inst, err := GetInstance(ctx, c, id)
	if err != nil {
		return SnapshotRequest{}, err
	}
	filter, err := NewFilter(inst.Subscriptions)
	if err != nil {
		return SnapshotRequest{}, err
	}
	for _, t := range tables {
		db, name, ok := splitTableName(t)
		if !ok {
			return SnapshotRequest{}, fmt.Errorf("table %q: want db.table", t)
		}
		if len(filter.Match(db, name, rowenc.TypeSnapshot)) == 0 {
			return SnapshotRequest{}, fmt.Errorf("table %q is in no subscription of instance %q that takes inserts", t, id)
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	now := time.Now().UTC()
	req := SnapshotRequest{ID: now.Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]), Tables: tables, RequestedAt: now.Format(time.RFC3339)}
	data, _ := json.Marshal(req)
	if _, err := c.Put(ctx, instanceKey(id, "snapshot"), data, coord.AnyVersion); err != nil {
		return SnapshotRequest{}, fmt.Errorf("write the snapshot request: %w", err)
	}
	return req, nil
}

// readSnapshotRequest returns the instance's snapshot request; ok is false when there
// is none.
func readSnapshotRequest(ctx context.Context, c coord.Coordinator, id string) (req SnapshotRequest, ok bool, err error) {
	v, err := c.Get(ctx, instanceKey(id, "snapshot"))
	if errors.Is(err, coord.ErrNotFound) {
		return req, false, nil
	}
	if err != nil {
		return req, false, err
	}
	if err := json.Unmarshal(v.Data, &req); err != nil || req.ID == "" {
		return req, false, fmt.Errorf("snapshot request of %s is not a request: %q", id, v.Data)
	}
	return req, true, nil
}

// splitTableName splits "db.table" (neither part empty; the table may hold dots).
func splitTableName(s string) (db, table string, ok bool) {
	db, table, ok = strings.Cut(s, ".")
	return db, table, ok && db != "" && table != ""
}

// binlogReached reports whether the binlog read up to at has reached end: a later file,
// or the same file at or past end's offset. Files of one server sort by their numeric
// suffix.
func binlogReached(at, end Position) bool {
	if at.File == end.File {
		return at.Pos >= end.Pos
	}
	return binlogSeq(at.File) > binlogSeq(end.File)
}

func binlogSeq(file string) int64 {
	i := strings.LastIndexByte(file, '.')
	n, err := strconv.ParseInt(file[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// initialSnapshotProgress is the progress of the snapshot SnapshotOptions.Initial asks
// for: every subscribed table, listed now, before the first offset is committed.
func initialSnapshotProgress(ctx context.Context, inst *Instance, password string, filter *Filter) (*SnapshotProgress, error) {
	src := snapshotSource{addr: inst.Source.Addr, user: inst.Source.User, password: password}
	defer src.close()
	if err := src.checkRowImage(ctx); err != nil {
		return nil, err
	}
	tables, err := src.subscribedTables(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("initial snapshot: %w", err)
	}
	return &SnapshotProgress{Request: initialSnapshot, Tables: tables, Done: len(tables) == 0,
		StartedAt: time.Now().UTC().Format(time.RFC3339)}, nil
}

// pollSnapshotRequests hands the capture the instance's snapshot request whenever it
// changes (and once when the leadership starts): the capture ignores the request whose
// progress the offset already carries.
func (w *Wave) pollSnapshotRequests(ctx context.Context, id string, out chan<- SnapshotRequest, log *slog.Logger) {
	t := time.NewTicker(w.opts.PollInterval)
	defer t.Stop()
	last := ""
	for {
		req, ok, err := readSnapshotRequest(ctx, w.opts.Coord, id)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("read the snapshot request", "err", err)
		case ok && req.ID != last:
			select {
			case out <- req:
				last = req.ID
			default: // the capture has not taken the previous one yet
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// keyValueOf keeps a primary-key column's value of a query row for resuming after it.
func keyValueOf(fv *mysql.FieldValue, c *rowenc.Column) KeyValue {
	switch fv.Type {
	case mysql.FieldValueTypeSigned:
		x := fv.AsInt64()
		return KeyValue{Int: &x}
	case mysql.FieldValueTypeUnsigned:
		x := fv.AsUint64()
		return KeyValue{Uint: &x}
	case mysql.FieldValueTypeFloat:
		x := fv.AsFloat64()
		return KeyValue{Float: &x}
	}
	if c.Binary {
		return KeyValue{Bytes: bytes.Clone(fv.AsString())}
	}
	s := string(fv.AsString())
	return KeyValue{Text: &s}
}
