package capture

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
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

// snapshotGuard is how far before a chunk's read a binlog event's row still replaces
// the chunk's: a transaction is in the binlog a moment before its rows are visible to
// other sessions.
const snapshotGuard = 2 * time.Second

// binlogReached reports whether the binlog read up to at has reached end: a later file,
// or the same file at or past end's offset. Files of one server sort by their numeric
// suffix.
func binlogReached(at, end cluster.Position) bool {
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
func InitialSnapshotProgress(ctx context.Context, inst *cluster.Instance, password string, filter *cluster.Filter) (*cluster.SnapshotProgress, error) {
	ep, err := EndpointOf(inst.Source, password)
	if err != nil {
		return nil, err
	}
	src := snapshotSource{ep: ep}
	defer src.close()
	if err := src.checkRowImage(ctx); err != nil {
		return nil, err
	}
	tables, err := src.subscribedTables(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("initial snapshot: %w", err)
	}
	return &cluster.SnapshotProgress{Request: cluster.InitialSnapshot, Tables: tables, Done: len(tables) == 0,
		StartedAt: time.Now().UTC().Format(time.RFC3339)}, nil
}

// SubscribedTables lists the base tables of the source that filter's subscriptions
// take and inst's user can see ("db.table", sorted): what an initial snapshot reads.
// information_schema shows a user only the tables it holds some privilege on, so a
// replication user without SELECT sees none.
func SubscribedTables(ctx context.Context, src cluster.Source, password string, filter *cluster.Filter) ([]string, error) {
	ep, err := EndpointOf(src, password)
	if err != nil {
		return nil, err
	}
	s := snapshotSource{ep: ep}
	defer s.close()
	return s.subscribedTables(ctx, filter)
}

// keyValueOf keeps a primary-key column's value of a query row for resuming after it.
func keyValueOf(fv *mysql.FieldValue, c *rowenc.Column) cluster.KeyValue {
	switch fv.Type {
	case mysql.FieldValueTypeSigned:
		x := fv.AsInt64()
		return cluster.KeyValue{Int: &x}
	case mysql.FieldValueTypeUnsigned:
		x := fv.AsUint64()
		return cluster.KeyValue{Uint: &x}
	case mysql.FieldValueTypeFloat:
		x := fv.AsFloat64()
		return cluster.KeyValue{Float: &x}
	}
	if c.Binary {
		return cluster.KeyValue{Bytes: bytes.Clone(fv.AsString())}
	}
	s := string(fv.AsString())
	return cluster.KeyValue{Text: &s}
}
