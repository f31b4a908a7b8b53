package capture

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// The capture's side of a snapshot (snapshot.go): between binlog transactions it reads
// the next chunk of the table being snapshotted, then goes on reading the binlog; rows
// that binlog events change meanwhile leave the chunk, and once the binlog has reached
// where it ended after the read, the rest is emitted, before any later event.

// snapshotRun is the capture's state of a snapshot.
type snapshotRun struct {
	src     snapshotSource
	opts    *cluster.SnapshotOptions
	table   *rowenc.Table        // the layout of the table being read; nil until its next chunk
	pending *snapshotChunk       // read, waiting for the binlog to reach its end
	touched map[string]time.Time // keys of that table the binlog changed lately
	// requests are new snapshot requests from the coordinator (the leader polls them).
	requests <-chan cluster.SnapshotRequest
	nextRead time.Time // the rows_per_second pace
	pruned   time.Time // when touched last lost its old keys
	lastLog  time.Time
	logRows  int64 // progress rows at lastLog
	onRows   func(rows, tablesLeft int)
}

// snapshotChunk is a chunk read and not yet emitted.
type snapshotChunk struct {
	rows  []rowenc.QueryRow
	index map[string]int     // key -> row; dropped rows are nil in rows
	end   cluster.Position   // where the binlog ended after the read
	last  []cluster.KeyValue // the last row's key: the progress once emitted
	final bool               // fewer rows than asked: the table's last chunk
}

func (ch *snapshotChunk) drop(key string) {
	if i, ok := ch.index[key]; ok {
		ch.rows[i] = nil
		delete(ch.index, key)
	}
}

// prune forgets the keys touched longer than snapshotGuard ago (once a second): only
// the recent ones can still be newer than a chunk read now.
func (s *snapshotRun) prune(now time.Time) {
	if now.Sub(s.pruned) < time.Second {
		return
	}
	s.pruned = now
	for k, at := range s.touched {
		if now.Sub(at) > snapshotGuard {
			delete(s.touched, k)
		}
	}
}

// snapActive: a snapshot is being read.
func (c *Capture) snapActive() bool { return c.snap != nil && c.resume.Snapshot.Active() }

// snapTable is the table being read, "db.table", or "".
func (c *Capture) snapTable() string {
	if !c.snapActive() || len(c.resume.Snapshot.Tables) == 0 {
		return ""
	}
	return c.resume.Snapshot.Tables[0]
}

// snapTouch records the keys of a rows event of the table being read and drops them
// from the pending chunk: the event carries the newer whole row.
func (c *Capture) snapTouch(b *rowsBatch) {
	now := time.Now()
	s := c.snap
	touch := func(key []byte) {
		k := string(key)
		s.touched[k] = now
		if s.pending != nil {
			s.pending.drop(k)
		}
	}
	for i := range b.Rows.Len() {
		c.keyBuf = b.Rows.AppendKey(c.keyBuf[:0], b.Table, rowenc.PartitionPK, i)
		touch(c.keyBuf)
	}
}

// snapDDL forgets what a DDL may have changed: the table's layout and the chunk read
// with it (read again after the DDL).
func (c *Capture) snapDDL() {
	if c.snap != nil {
		c.snap.table, c.snap.pending = nil, nil
	}
}

// snapStep, at a transaction boundary, starts a requested snapshot, emits the pending
// chunk once the binlog reached its end, and reads chunks while that end is reached at
// once (an idle source), for at most a short while: the binlog waits meanwhile.
func (c *Capture) snapStep(ctx context.Context) error {
	s := c.snap
	if s == nil {
		return nil
	}
	select {
	case req := <-s.requests:
		if p := c.resume.Snapshot; p == nil || p.Request != req.ID {
			if err := c.snapStart(ctx, req); err != nil {
				return err
			}
		}
	default:
	}
	if !c.snapActive() {
		return nil
	}
	s.prune(time.Now())
	deadline := time.Now().Add(200 * time.Millisecond)
	for c.snapActive() && time.Now().Before(deadline) {
		if s.pending == nil {
			if time.Now().Before(s.nextRead) {
				return nil
			}
			if err := c.snapRead(ctx); err != nil {
				return c.snapReadFailed(err)
			}
			continue
		}
		if !binlogReached(c.readPos, s.pending.end) {
			return nil
		}
		// While the chunk is encoded and sent, the next one is read: the source's work
		// and the parsing of its answer overlap the encoding (the binlog waits either way).
		var next chan fetched
		if ch := s.pending; !ch.final && !time.Now().Before(s.nextRead) {
			next = make(chan fetched, 1)
			t, after := s.table, ch.last
			go func() { next <- s.fetch(ctx, t, after) }()
		}
		err := c.snapEmit(ctx)
		if next != nil {
			f := <-next // awaited before anything else uses the connection
			if err == nil {
				if err := c.snapTake(ctx, f); err != nil {
					return c.snapReadFailed(err)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// snapReadFailed stops the instance on a fatal error; on another it tries again shortly,
// the binlog going on meanwhile.
func (c *Capture) snapReadFailed(err error) error {
	if IsFatal(err) {
		return err
	}
	c.Log.Warn("snapshot read failed; trying again shortly", "table", c.snapTable(), "err", err)
	c.snap.nextRead = time.Now().Add(2 * time.Second)
	return nil
}

// snapStart begins the snapshot req asks for, replacing any other.
func (c *Capture) snapStart(ctx context.Context, req cluster.SnapshotRequest) error {
	s := c.snap
	tables := req.Tables
	if len(tables) == 0 {
		var err error
		if tables, err = s.src.subscribedTables(ctx, c.Filter); err != nil {
			c.Log.Warn("snapshot request: listing the tables failed; trying again at the next request poll", "request", req.ID, "err", err)
			return nil
		}
	}
	if err := s.src.checkRowImage(ctx); err != nil {
		if IsFatal(err) {
			return err
		}
		c.Log.Warn("snapshot request: reading binlog_row_image failed; trying again at the next request poll", "request", req.ID, "err", err)
		return nil
	}
	p := &cluster.SnapshotProgress{Request: req.ID, Tables: tables, StartedAt: time.Now().UTC().Format(time.RFC3339)}
	if len(tables) == 0 {
		p.Done = true
	}
	c.Log.Info("snapshot starting", "request", req.ID, "tables", tables, "chunk_rows", s.opts.ChunkSize(), "rows_per_second", s.opts.RowsPerSecond)
	s.table, s.pending, s.lastLog, s.logRows = nil, nil, time.Now(), 0
	clear(s.touched)
	return c.snapCommit(ctx, Item{}, p)
}

// snapRead reads the next chunk of the table being snapshotted.
func (c *Capture) snapRead(ctx context.Context) error {
	s := c.snap
	p := c.resume.Snapshot
	name := p.Tables[0]
	db, table, _ := cluster.SplitTableName(name)
	if s.table == nil {
		t, err := s.src.table(ctx, c.sc, db, table)
		if reason := unreadable(err); reason != "" {
			return c.snapSkip(ctx, reason)
		}
		if err != nil {
			return err
		}
		s.table = t
	}
	return c.snapTake(ctx, s.fetch(ctx, s.table, p.After))
}

// fetched is a chunk as the source returned it.
type fetched struct {
	rows []rowenc.QueryRow
	end  cluster.Position // where the binlog ended after the read
	at   time.Time        // when the read began
	n    int              // rows asked for
	err  error
}

// fetch reads the chunk of t after the key after, then where the binlog ends. It changes
// no capture state, so it may run while the capture emits the previous chunk.
func (s *snapshotRun) fetch(ctx context.Context, t *rowenc.Table, after []cluster.KeyValue) fetched {
	f := fetched{at: time.Now(), n: s.opts.ChunkSize()}
	if f.rows, f.err = s.src.chunk(ctx, t, after, f.n); f.err == nil {
		f.end, f.err = s.src.binlogEnd(ctx)
	}
	return f
}

// snapTake makes a fetched chunk the pending one, without the rows binlog events changed
// shortly before the read.
func (c *Capture) snapTake(ctx context.Context, f fetched) error {
	s := c.snap
	switch reason := unreadable(f.err); {
	case errors.Is(f.err, errTableChanged):
		s.table = nil
		return nil
	case reason != "":
		return c.snapSkip(ctx, reason)
	case f.err != nil:
		return f.err
	}
	rows, end, n, readAt := f.rows, f.end, f.n, f.at
	ch := &snapshotChunk{rows: rows, index: make(map[string]int, len(rows)), end: end, final: len(rows) < n}
	if len(rows) > 0 {
		// The next chunk starts after the last row read, whether or not it is emitted.
		last := rows[len(rows)-1]
		for _, ci := range s.table.PK {
			ch.last = append(ch.last, keyValueOf(&last[ci], &s.table.Columns[ci]))
		}
	}
	keys := rowenc.QueryRows(rows)
	for i := range rows {
		c.keyBuf = keys.AppendKey(c.keyBuf[:0], s.table, rowenc.PartitionPK, i)
		k := string(c.keyBuf)
		if _, ok := s.touched[k]; ok {
			rows[i] = nil // a binlog event changed it shortly before the read
			continue
		}
		ch.index[k] = i
	}
	s.pending = ch
	if rps := s.opts.RowsPerSecond; rps > 0 {
		from := s.nextRead
		if from.Before(readAt) {
			from = readAt
		}
		s.nextRead = from.Add(time.Duration(float64(len(rows)) / float64(rps) * float64(time.Second)))
	}
	return nil
}

// snapSkip moves on from the table being read, which it cannot read, saying why.
func (c *Capture) snapSkip(ctx context.Context, reason string) error {
	p := c.resume.Snapshot
	c.Log.Warn("snapshot: skipping a table it cannot read", "table", p.Tables[0], "reason", reason)
	next := p.Next(0)
	next.Skipped = append(slices.Clip(p.Skipped), p.Tables[0]+": "+reason)
	c.snap.table = nil
	return c.snapCommit(ctx, Item{}, next)
}

// unreadable says why a snapshot cannot read a table at all ("" when err is not such a
// reason): it then skips the table and reads the others.
func unreadable(err error) string {
	var me *mysql.MyError
	switch {
	case errors.Is(err, errNoPrimaryKey):
		return err.Error()
	case errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_TABLE:
		return "the table is gone"
	}
	return ""
}

// snapEmit emits the pending chunk's remaining rows as snapshot messages, with the
// progress after them as the item's commit.
func (c *Capture) snapEmit(ctx context.Context) error {
	s := c.snap
	ch := s.pending
	s.pending = nil
	p := c.resume.Snapshot
	rows := slices.DeleteFunc(ch.rows, func(r rowenc.QueryRow) bool { return r == nil })
	var it Item
	if len(rows) > 0 {
		b := &rowsBatch{subs: c.Filter.Match(s.table.Database, s.table.Name, rowenc.TypeSnapshot), Event: rowenc.Event{
			Table: s.table, Type: rowenc.TypeSnapshot, Rows: rowenc.QueryRows(rows),
			Meta: rowenc.Meta{Instance: c.Inst.ID, TS: time.Now().Unix(), File: ch.end.File, Pos: ch.end.Pos}}}
		var err error
		if it, err = c.encode(ctx, b, true, 0); err != nil {
			return err
		}
	}
	next := p.AfterChunk(ch.last, int64(len(rows)))
	if ch.final {
		next = p.Next(int64(len(rows)))
		// snapshot_rows_so_far: the whole snapshot's rows, every table done so far (named
		// snapshot_rows beside table_rows, it read as the table's: an outside trial).
		c.Log.Info("snapshot: table done", "table", p.Tables[0], "table_rows", p.TableRows+int64(len(rows)), "snapshot_rows_so_far", next.Rows)
		s.table = nil
		clear(s.touched)
	}
	return c.snapCommit(ctx, it, next)
}

// snapCommit makes p the progress at the current boundary and sends it as the commit of
// chunk, the chunk's encoded rows (none: Item{}).
func (c *Capture) snapCommit(ctx context.Context, chunk Item, p *cluster.SnapshotProgress) error {
	c.resume.Snapshot = p
	// No ts: a snapshot chunk moves no binlog position, so it leaves the lag alone.
	it := Item{Msgs: chunk.Msgs, ExtraRows: chunk.ExtraRows, Bytes: chunk.Bytes, Commit: ptr(c.offset())}
	s := c.snap
	if s.onRows != nil {
		s.onRows(int(p.Rows), len(p.Tables))
	}
	switch now := time.Now(); {
	case p.Done:
		c.Log.Info("snapshot finished", "request", p.Request, "snapshot_rows", p.Rows, "started_at", p.StartedAt)
	case now.Sub(s.lastLog) >= 10*time.Second:
		rate := float64(p.Rows-s.logRows) / now.Sub(s.lastLog).Seconds()
		c.Log.Info("snapshot progress", "request", p.Request, "table", p.Tables[0], "tables_left", len(p.Tables),
			"snapshot_rows", p.Rows, "rows_per_second", int64(rate))
		s.lastLog, s.logRows = now, p.Rows
	}
	return c.send(ctx, it)
}
