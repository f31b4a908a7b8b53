// Package rowenc is where a row becomes a message: it turns the row images of a binlog
// rows event (read in place from the event's bytes, or decoded by go-mysql) and of a
// snapshot's query into the JSON row messages and partitioning keys of docs/design.md
// ("Row message"). Reader and Encoder (event.go) are its entry point from a rows event;
// EncodeRow, EncodeDDL and AppendKey (row.go) encode one row or DDL. It knows nothing of
// coordinators or sinks: another message format belongs beside these encoders.
package rowenc

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"
)

// This file is the entry point from a rows event to its messages: Reader reads the
// event's row images, Encoder turns them into one message per row and key. EncodeRow,
// EncodeDDL and AppendKey (row.go) do the same for one row given as go-mysql's values.

// Rows is the row images of one rows event or snapshot chunk, in order (before and after
// of an update): read in place from the event's bytes, decoded by go-mysql, or as a query
// returned them. Exactly one kind is set.
type Rows struct {
	raw   []rawImage
	rows  []values
	query []QueryRow
}

// QueryRows is the rows of a snapshot chunk as Rows.
func QueryRows(rows []QueryRow) Rows { return Rows{query: rows} }

// Len is the number of row images.
func (r Rows) Len() int {
	switch {
	case r.raw != nil:
		return len(r.raw)
	case r.query != nil:
		return len(r.query)
	}
	return len(r.rows)
}

// AppendKey appends the partitioning key (AppendKey) of image i.
func (r Rows) AppendKey(dst []byte, t *Table, by string, i int) []byte {
	switch {
	case r.raw != nil:
		return appendKey(dst, t, by, r.raw[i])
	case r.query != nil:
		return appendKey(dst, t, by, r.query[i])
	}
	return appendKey(dst, t, by, r.rows[i])
}

// Reader reads the row images of rows events whose rows the syncer left undecoded
// (DecodeHeader). It keeps its scratch from one event to the next: the Rows it returns
// are valid until its next Read. It belongs to one capture session's goroutine.
type Reader struct {
	decoder *rowsDecoder // the rows go-mysql decodes: those not read in place
	fields  []span       // the last event's fields, when read in place
	raws    []rawImage   // and its row images
}

// NewReader is a Reader for a new binlog connection.
func NewReader() *Reader { return &Reader{decoder: newRowsDecoder()} }

// Read reads the row images of e, a rows event of type et (TypeInsert, TypeUpdate or
// TypeDelete in typ) of table t: in place when the event allows it, else decoded by
// go-mysql. An event whose fields do not add up in place (which go-mysql's own decoding
// would then refuse too) goes through go-mysql, whose error says more.
func (r *Reader) Read(et replication.EventType, e *replication.RowsEvent, t *Table, typ string) (Rows, error) {
	u, ok := undecodedOf(e)
	if ok && readableInPlace(et, e, t) {
		fields, raws, err := readImages(r.fields[:0], r.raws[:0], u.data[u.pos:], t, typ)
		r.fields, r.raws = fields, raws
		if err == nil {
			return Rows{raw: raws}, nil
		}
	}
	if ok {
		if err := r.decoder.decodeRows(e, u); err != nil {
			return Rows{}, err
		}
	}
	rows := make([]values, len(e.Rows))
	for i, row := range e.Rows {
		if t.charsets {
			decodeText(t, row)
		}
		rows[i] = row
	}
	return Rows{rows: rows}, nil
}

// decodeText replaces the values of row (go-mysql's: a string, or []byte for TEXT) of
// t's columns with a Charset by their text in UTF-8.
func decodeText(t *Table, row []any) {
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Charset == nil || i >= len(row) {
			continue
		}
		switch v := row[i].(type) {
		case string:
			row[i] = string(c.Charset.Decode(nil, []byte(v)))
		case []byte:
			row[i] = c.Charset.Decode(nil, v)
		}
	}
}

// Event is a rows event (or snapshot chunk) read but not yet encoded.
type Event struct {
	Table *Table
	Type  string
	Meta  Meta
	Rows  Rows
}

// Message is one encoded message: a row's value and its key partitioned as targets[By]
// says (Encode), or a group of rows' (GroupFormat) keyed by its first row's key. The
// keys and values of an event share one arena, each capped so that appending to it
// copies. A tombstone (Format.Tombstones) has a nil Value.
type Message struct {
	Key, Value []byte
	By         int
	// Rows is the number of row changes the message carries: 1, or a group's rows (a
	// tombstone counts as one, as its delete does).
	Rows int
}

// Target is where Encode sends each row: a subscription's partitioning (PartitionPK,
// PartitionTable or PartitionDatabase) and its format (nil: json).
type Target struct {
	By     string
	Format Format
	// Partition, when set, says which partition of the target's topic a key goes to
	// (ok false: not known now). A GroupFormat's rows of one event that go to one
	// partition are then sent in one message (group.go); nil: one message per row.
	Partition func(key []byte) (part int, ok bool)
	// GroupBytes bounds a group message's key and value (0: DefaultGroupBytes); a row
	// larger than it alone is a message of its own.
	GroupBytes int
}

// msgSpan is one message in Encode's arena; vStart < 0 is a tombstone. rows is the
// number of row changes it carries (0: one).
type msgSpan struct{ by, kStart, kEnd, vStart, vEnd, rows int }

// Keep decides about each message before Encode keeps it: false drops it (with a nil
// error), an error stops the encoding. A tombstone's value is nil.
type Keep func(ev *Event, key, value []byte, m Meta) (bool, error)

// Encoder encodes rows events into messages, one per row and target. It keeps its
// scratch (and the size of the last event's messages, to size the next arena) from one
// event to the next; the messages it returns are valid until its next Encode. It belongs
// to one goroutine.
type Encoder struct {
	spans    []msgSpan
	msgs     []Message
	values   [][2]int   // per target, the current row's value in the arena (-1: none yet)
	row      Row        // the Row handed to a format: here, so that handing it over does not allocate
	scratch  rowScratch // the formats' scratch (Row.scratch)
	head     []byte     // the header of a rows event's json messages
	kbuf     []byte     // an update's keys before and after, compared (splitKeyChange)
	msgBytes int        // the last event's key and value bytes per row and target

	// The grouped targets' state (group.go), kept from one event to the next.
	groups    []groupTarget
	groupRows [][]groupRow // each groupTarget's rows slice, reused
	gbuf      []byte       // the grouped rows' keys and parts
	ghead     []byte       // a group head measured
	gsets     []group      // the groups being assembled
}

// Encode encodes ev's rows into their messages: for each row, one per target, asking
// keep (nil: keep all) about each. A row is encoded once per distinct format among the
// targets. commit marks the last row as its transaction's last, with xid.
func (e *Encoder) Encode(ev *Event, targets []Target, commit bool, xid uint64, keep Keep) ([]Message, error) {
	switch r := ev.Rows; {
	case r.raw != nil:
		return encodeEvent(e, ev, r.raw, targets, commit, xid, keep)
	case r.query != nil:
		return encodeEvent(e, ev, r.query, targets, commit, xid, keep)
	default:
		return encodeEvent(e, ev, r.rows, targets, commit, xid, keep)
	}
}

// KeyChangeSplitter is a Format that sends an update changing its row's primary key as
// its producer does: a delete under the old key (with its tombstone, when it sends
// them), then an insert under the new one. Debezium does, so that a compacted topic
// forgets the old key and each key's partition sees its row come and go in order; sent
// as one update under the new key, the old key's partition never learnt the row left.
type KeyChangeSplitter interface {
	SplitsKeyChange() bool
}

// KeyFormat is a Format whose messages carry their producer's own key under partition_by
// pk: Debezium's is a JSON struct of the primary key, where BinLake's (AppendKey) is
// db.table:[values], which no JSON reader takes. A table without a primary key has its
// producer's key for such a table (AppendKeylessKey). Elsewhere (a table's or database's
// key) the key is BinLake's.
type KeyFormat interface {
	OwnKey() bool
	AppendRowKey(dst []byte, r *Row, im Image) ([]byte, error)
	// AppendKeylessKey appends the key of a row of r's table, which has no primary key:
	// one key for the table, so that its rows keep their order in one partition.
	AppendKeylessKey(dst []byte, r *Row) []byte
}

// messageKey appends the key of target tg's message of image, which is im of e.row.
func messageKey[I rowImage[I]](e *Encoder, dst []byte, t *Table, tg Target, f Format, image I, im Image) ([]byte, error) {
	if kf, ok := f.(KeyFormat); ok && kf.OwnKey() {
		switch {
		case keysRow(t, tg.By, image):
			return kf.AppendRowKey(dst, &e.row, im)
		case (tg.By == PartitionPK || tg.By == "") && len(t.PK) == 0:
			return kf.AppendKeylessKey(dst, &e.row), nil
		}
	}
	return appendKey(dst, t, tg.By, image), nil
}

func splitsKeyChange(f Format) bool {
	s, ok := f.(KeyChangeSplitter)
	return ok && s.SplitsKeyChange()
}

// splitKeyChange appends target k's messages of an update (images bi and ai) whose
// primary key changed, for a format that splits it (KeyChangeSplitter): the delete under
// the old key, its tombstone, then the insert under the new key, which alone carries the
// transaction's commit.
func splitKeyChange[I rowImage[I]](e *Encoder, arena []byte, spans []msgSpan, ev *Event, k int, tg Target, f Format,
	bi, ai int, before, after I, m Meta, keep Keep) ([]byte, []msgSpan, error) {
	t := ev.Table
	defer func() { e.row.Type = ev.Type }()
	del := m
	del.Commit, del.XID = false, 0
	parts := []struct {
		typ    string
		bi, ai int
		image  I
		m      Meta
	}{{TypeDelete, bi, -1, before, del}, {TypeInsert, -1, ai, after, m}}
	for _, p := range parts {
		e.row.Type, e.row.Meta.Commit, e.row.Meta.XID = p.typ, p.m.Commit, p.m.XID
		e.row.Before.i, e.row.After.i = p.bi, p.ai
		vStart := len(arena)
		var err error
		if arena, err = f.AppendRow(arena, &e.row); err != nil {
			return arena, spans, fmt.Errorf("encode row of %s.%s at %s:%d (format %s): %w", t.Database, t.Name, m.File, m.Pos, f.Name(), err)
		}
		vEnd, kStart := len(arena), len(arena)
		im := e.row.After
		if p.typ == TypeDelete {
			im = e.row.Before
		}
		if arena, err = messageKey(e, arena, t, tg, f, p.image, im); err != nil {
			return arena, spans, fmt.Errorf("encode the key of a row of %s.%s at %s:%d (format %s): %w", t.Database, t.Name, m.File, m.Pos, f.Name(), err)
		}
		kEnd := len(arena)
		ok, err := keepMsg(keep, ev, arena[kStart:kEnd], arena[vStart:vEnd], p.m)
		if err != nil {
			return arena, spans, err
		}
		if !ok {
			arena = arena[:kStart]
			continue
		}
		spans = append(spans, msgSpan{by: k, kStart: kStart, kEnd: kEnd, vStart: vStart, vEnd: vEnd})
		if p.typ == TypeDelete && f.Tombstones() {
			if ok, err = keepMsg(keep, ev, arena[kStart:kEnd], nil, p.m); err != nil {
				return arena, spans, err
			}
			if ok {
				spans = append(spans, msgSpan{by: k, kStart: kStart, kEnd: kEnd, vStart: -1})
			}
		}
	}
	return arena, spans, nil
}

// formatOf is a target's format, json when unset.
func formatOf(tg Target) Format {
	if tg.Format == nil {
		return JSON
	}
	return tg.Format
}

// maxArenaGuess bounds the arena an event starts with. The guess is the last event's
// bytes per message times this one's messages: after one large row (40 MB) an event of
// a thousand small ones asked for 54 GB, and the wave died of it at the same row after
// every restart. Past the bound (4 MiB, or 512 bytes a message: rows of the usual size
// still start with room for all) the arena grows as its messages need.
const maxArenaGuess = 4 << 20

// arenaSize is the capacity an event of nMsgs messages starts its arena with, when the
// last event's were msgBytes each.
func arenaSize(nMsgs, msgBytes int) int {
	return min(nMsgs*max(msgBytes, 64)+msgBytes, max(maxArenaGuess, 512*nMsgs))
}

func encodeEvent[I rowImage[I]](e *Encoder, ev *Event, images []I, targets []Target, commit bool, xid uint64, keep Keep) ([]Message, error) {
	step := 1
	if ev.Type == TypeUpdate {
		step = 2
	}
	t := ev.Table
	// Every key and value of the event goes into one arena, sliced once it is complete:
	// one allocation per event instead of two per row and key, sized from the previous
	// events' messages so that it seldom grows.
	nMsgs := len(images) / step * len(targets)
	arena := make([]byte, 0, arenaSize(nMsgs, e.msgBytes))
	spans := e.spans[:0]
	e.values = slices.Grow(e.values[:0], len(targets))[:len(targets)]
	var head []byte
	// The Row handed to the other formats is the event's, set once: per row only its
	// images' indexes and its commit change, which are not pointers (a pointer written
	// into the Encoder, on the heap, costs a GC write barrier while a collection runs:
	// a whole Row per row was 4% of the protobuf format's CPU). Cleared at the end, so
	// that the Encoder does not keep the event alive.
	e.row = Row{Table: t, Type: ev.Type, event: ev.Type, Meta: ev.Meta,
		Before: Image{rows: &ev.Rows, t: t, i: -1}, After: Image{rows: &ev.Rows, t: t, i: -1}, scratch: &e.scratch}
	defer func() { e.row = Row{} }()
	grouped := e.groupsOf(targets) > 0
	e.gbuf = e.gbuf[:0]
	for i := 0; i+step <= len(images); i += step {
		var before, after I
		bi, ai := -1, -1
		switch ev.Type {
		case TypeInsert, TypeSnapshot:
			ai = i
		case TypeDelete:
			bi = i
		case TypeUpdate:
			bi, ai = i, i+1
		}
		if bi >= 0 {
			before = images[bi]
		}
		if ai >= 0 {
			after = images[ai]
		}
		m := ev.Meta
		if commit && i+step >= len(images) {
			m.Commit, m.XID = true, xid
		}
		image := after
		if image.isNil() {
			image = before
		}
		for k := range targets {
			e.values[k] = [2]int{-1, -1}
		}
		for k, tg := range targets {
			if grouped {
				if j := e.groupIndex(k); j >= 0 {
					// Keyed and encoded now, sent as part of a group after the last row.
					e.row.Meta.Commit, e.row.Meta.XID = m.Commit, m.XID
					e.row.Before.i, e.row.After.i = bi, ai
					if err := addGroupRow(e, j, tg, image, bi, ai, m.Commit); err != nil {
						return nil, fmt.Errorf("encode row of %s.%s at %s:%d (format %s): %w", t.Database, t.Name, m.File, m.Pos, e.groups[j].f.Name(), err)
					}
					continue
				}
			}
			f := formatOf(tg)
			if ev.Type == TypeUpdate && (tg.By == PartitionPK || tg.By == "") && splitsKeyChange(f) {
				if e.kbuf = appendKey(e.kbuf[:0], t, PartitionPK, before); !bytes.Equal(e.kbuf, appendKey(e.kbuf[len(e.kbuf):], t, PartitionPK, after)) {
					var err error
					if arena, spans, err = splitKeyChange(e, arena, spans, ev, k, tg, f, bi, ai, before, after, m, keep); err != nil {
						return nil, err
					}
					continue
				}
			}
			// One encoding per format: a later target of the same format shares it.
			vStart, vEnd := -1, -1
			for j := range k {
				if formatOf(targets[j]) == f && e.values[j][0] >= 0 {
					vStart, vEnd = e.values[j][0], e.values[j][1]
					break
				}
			}
			if vStart < 0 {
				vStart = len(arena)
				var err error
				if f == JSON {
					// The header is the same for every row of the event but its last:
					// encoded once and copied.
					if m.Commit {
						arena = appendHeader(arena, t.names, t.Database, t.Name, ev.Type, m)
					} else {
						if head == nil {
							head = appendHeader(e.head[:0], t.names, t.Database, t.Name, ev.Type, ev.Meta)
							e.head = head
						}
						arena = append(arena, head...)
					}
					arena, err = encodeRow(arena, t, before, after)
				} else {
					e.row.Meta.Commit, e.row.Meta.XID = m.Commit, m.XID
					e.row.Before.i, e.row.After.i = bi, ai
					arena, err = f.AppendRow(arena, &e.row)
				}
				if err != nil {
					return nil, fmt.Errorf("encode row of %s.%s at %s:%d (format %s): %w", t.Database, t.Name, m.File, m.Pos, f.Name(), err)
				}
				vEnd = len(arena)
			}
			e.values[k] = [2]int{vStart, vEnd}
			kStart := len(arena)
			e.row.Before.i, e.row.After.i = bi, ai
			im := e.row.After
			if ai < 0 {
				im = e.row.Before
			}
			var err error
			if arena, err = messageKey(e, arena, t, tg, f, image, im); err != nil {
				return nil, fmt.Errorf("encode the key of a row of %s.%s at %s:%d (format %s): %w", t.Database, t.Name, m.File, m.Pos, f.Name(), err)
			}
			kEnd := len(arena)
			ok, err := keepMsg(keep, ev, arena[kStart:kEnd], arena[vStart:vEnd], m)
			if err != nil {
				return nil, err
			}
			if !ok {
				arena = arena[:kStart]
				continue
			}
			spans = append(spans, msgSpan{by: k, kStart: kStart, kEnd: kEnd, vStart: vStart, vEnd: vEnd})
			// A tombstone deletes its key under log compaction: only a row's own key
			// (pk partitioning of a table with a primary key) may have one, never a
			// whole table's or database's (a table without a key sent the table's).
			if ev.Type == TypeDelete && f.Tombstones() && keysRow(t, tg.By, image) {
				if ok, err = keepMsg(keep, ev, arena[kStart:kEnd], nil, m); err != nil {
					return nil, err
				}
				if ok {
					spans = append(spans, msgSpan{by: k, kStart: kStart, kEnd: kEnd, vStart: -1})
				}
			}
		}
	}
	for j := range e.groups {
		var err error
		if arena, spans, err = e.appendGroups(arena, spans, j, targets[e.groups[j].k], ev, xid, keep); err != nil {
			return nil, err
		}
	}
	e.spans = spans
	if nMsgs > 0 {
		e.msgBytes = len(arena)/nMsgs + 1
	}
	msgs := e.msgs[:0]
	for _, sp := range spans {
		msg := Message{Key: arena[sp.kStart:sp.kEnd:sp.kEnd], By: sp.by, Rows: max(sp.rows, 1)}
		if sp.vStart >= 0 {
			msg.Value = arena[sp.vStart:sp.vEnd:sp.vEnd]
		}
		msgs = append(msgs, msg)
	}
	e.msgs = msgs
	return msgs, nil
}

// keepMsg asks keep, when set, about one message.
func keepMsg(keep Keep, ev *Event, key, value []byte, m Meta) (bool, error) {
	if keep == nil {
		return true, nil
	}
	return keep(ev, key, value, m)
}
