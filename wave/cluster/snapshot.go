package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/rowenc"
)

// Snapshot defaults and bounds.
const (
	DefaultSnapshotChunkRows = 2048
	maxSnapshotChunkRows     = 100_000
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
		return config.Bad("snapshot.chunk_rows", "%d: want 1 to %d (0: %d)", o.ChunkRows, maxSnapshotChunkRows, DefaultSnapshotChunkRows)
	}
	if o.RowsPerSecond < 0 {
		return config.Bad("snapshot.rows_per_second", "%d: want 0 (unbounded) or more", o.RowsPerSecond)
	}
	return nil
}

// ChunkSize is how many rows one read takes: ChunkRows or its default.
func (o *SnapshotOptions) ChunkSize() int {
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

// InitialSnapshot is the request ID of the snapshot SnapshotOptions.Initial starts.
const InitialSnapshot = "initial"

// SnapshotProgress is how far a snapshot got, carried in the offset (Position.Snapshot)
// so that it resumes where the last acknowledged chunk ended.
type SnapshotProgress struct {
	Request string `json:"request"`
	// Tables are the tables still to read, the one being read first; resolved from the
	// request when the snapshot starts.
	Tables []string `json:"tables,omitempty"`
	// After is the primary key of the last row read from Tables[0]; empty: its start.
	After []KeyValue `json:"after,omitempty"`
	// Rows counts the snapshot's messages' rows emitted so far; TableRows those of
	// Tables[0] (its log line at the end says both).
	Rows      int64 `json:"rows"`
	TableRows int64 `json:"table_rows,omitempty"`
	// Skipped are the tables the snapshot could not read, each with the reason (no
	// primary key; gone).
	Skipped []string `json:"skipped,omitempty"`
	// Done: every table was read.
	Done      bool   `json:"done,omitempty"`
	StartedAt string `json:"started_at,omitempty"`
}

// Active reports whether a snapshot is under way: p is set and not done.
func (p *SnapshotProgress) Active() bool { return p != nil && !p.Done }

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

// Arg is the value as a statement argument.
func (k KeyValue) Arg() any {
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
		db, name, ok := SplitTableName(t)
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
	if _, err := c.Put(ctx, SnapshotKey(id), data, coord.AnyVersion); err != nil {
		return SnapshotRequest{}, fmt.Errorf("write the snapshot request: %w", err)
	}
	return req, nil
}

// ReadSnapshotRequest returns the instance's snapshot request; ok is false when there
// is none.
func ReadSnapshotRequest(ctx context.Context, c coord.Coordinator, id string) (req SnapshotRequest, ok bool, err error) {
	v, err := c.Get(ctx, SnapshotKey(id))
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

// AfterChunk is the progress once a chunk of rows ending at key last was emitted.
func (p *SnapshotProgress) AfterChunk(last []KeyValue, rows int64) *SnapshotProgress {
	n := *p
	n.After, n.Rows, n.TableRows = last, p.Rows+rows, p.TableRows+rows
	return &n
}

// Next is the progress once the current table's last chunk (rows) was emitted.
func (p *SnapshotProgress) Next(rows int64) *SnapshotProgress {
	n := *p
	n.Tables, n.After, n.Rows, n.TableRows = p.Tables[1:], nil, p.Rows+rows, 0
	n.Done = len(n.Tables) == 0
	return &n
}

// SplitTableName splits "db.table" (neither part empty; the table may hold dots).
func SplitTableName(s string) (db, table string, ok bool) {
	db, table, ok = strings.Cut(s, ".")
	return db, table, ok && db != "" && table != ""
}
