package rowenc

// This file is the grouping of a rows event's rows into fewer messages, for the formats
// whose peers' producers send a batch of rows in one message (Canal's, with
// flatMessage=false). Keys and partitions stay as they are without it: the Encoder asks
// the target's Partition where each row's key goes, and puts the rows of one event that
// go to one partition, in order, into one message keyed by the first of them, which goes
// to that same partition. A row's changes therefore stay in order on its partition, as
// one message per row keeps them.

// GroupFormat is a Format whose message can carry several row changes of one rows
// event: a head, then each row's part, in order. The head depends on the event (table,
// type, position) and the parts' total length, not on the rows. A group of one row is
// exactly AppendRow's message. A GroupFormat has no tombstones (Tombstones is false).
type GroupFormat interface {
	Format
	// AppendRowPart appends row r's part of a group message.
	AppendRowPart(dst []byte, r *Row) ([]byte, error)
	// AppendGroupHead appends the head of a group message of rows of r's event whose
	// parts, concatenated after it, are n bytes.
	AppendGroupHead(dst []byte, r *Row, n int) []byte
}

// DefaultGroupBytes bounds a group message (key and value) when its Target sets no
// bound: large enough that a group's head is a small share of it, small enough that a
// produce request holds many.
const DefaultGroupBytes = 256 << 10

// groupHeadRoom is what a group's head may grow by over a head for no parts: three
// nested lengths, each at most five bytes longer as a varint.
const groupHeadRoom = 15

// groupTarget is a grouped target's rows of the event being encoded.
type groupTarget struct {
	k     int         // the target's index
	f     GroupFormat // its format
	share int         // the earlier groupTarget of the same format whose parts it uses; -1: none
	known bool        // every row's partition was known so far (else: one message per row)
	rows  []groupRow
}

// groupRow is one row of a groupTarget: its partition, its key and its part in the
// Encoder's gbuf.
type groupRow struct {
	part         int
	kStart, kEnd int
	pStart, pEnd int
	bi, ai       int // its images' indexes (for a message of its own)
	commit       bool
	next         int32 // the next row of its group; -1: the last
}

// group is one message being assembled: its rows (linked by groupRow.next), their
// parts' bytes.
type group struct {
	part        int
	first, last int32
	bytes, rows int
	open        bool
}

// groupsOf prepares e.groups for targets: one groupTarget per target whose format is a
// GroupFormat without tombstones and that says where keys go. It returns how many.
func (e *Encoder) groupsOf(targets []Target) int {
	e.groups = e.groups[:0]
	for k, tg := range targets {
		gf, ok := formatOf(tg).(GroupFormat)
		if !ok || tg.Partition == nil || gf.Tombstones() {
			continue
		}
		share := -1
		for j := range e.groups {
			if e.groups[j].f == gf {
				share = j
				break
			}
		}
		e.groups = append(e.groups, groupTarget{k: k, f: gf, share: share, known: true, rows: e.groupRowsFor(len(e.groups))})
	}
	return len(e.groups)
}

// groupRowsFor is the emptied rows slice the j-th groupTarget had last time, reused.
func (e *Encoder) groupRowsFor(j int) []groupRow {
	if j < len(e.groupRows) {
		return e.groupRows[j][:0]
	}
	e.groupRows = append(e.groupRows, nil)
	return nil
}

// groupIndex is the index in e.groups of target k, or -1.
func (e *Encoder) groupIndex(k int) int {
	for j := range e.groups {
		if e.groups[j].k == k {
			return j
		}
	}
	return -1
}

// addGroupRow records one row of groupTarget j: its key, where the key goes and its part
// (encoded, or the part the groupTarget it shares with encoded for the same row).
func addGroupRow[I rowImage[I]](e *Encoder, j int, tg Target, image I, bi, ai int, commit bool) error {
	g := &e.groups[j]
	t := e.row.Table
	r := groupRow{bi: bi, ai: ai, commit: commit, next: -1}
	r.kStart = len(e.gbuf)
	e.gbuf = appendKey(e.gbuf, t, tg.By, image)
	r.kEnd = len(e.gbuf)
	if g.known {
		part, ok := tg.Partition(e.gbuf[r.kStart:r.kEnd])
		if ok && part >= 0 {
			r.part = part
		} else {
			g.known = false // asked no more for this event: one message per row
		}
	}
	if g.share >= 0 {
		src := e.groups[g.share].rows[len(g.rows)]
		r.pStart, r.pEnd = src.pStart, src.pEnd
	} else {
		r.pStart = len(e.gbuf)
		var err error
		if e.gbuf, err = g.f.AppendRowPart(e.gbuf, &e.row); err != nil {
			return err
		}
		r.pEnd = len(e.gbuf)
	}
	g.rows = append(g.rows, r)
	return nil
}

// appendGroups appends groupTarget j's messages to arena and their spans: the rows of
// one partition in messages of at most bound bytes (tg.GroupBytes), each keyed by its
// first row's key; one message per row when a partition was not known.
func (e *Encoder) appendGroups(arena []byte, spans []msgSpan, j int, tg Target, ev *Event, xid uint64, keep Keep) ([]byte, []msgSpan, error) {
	g := &e.groups[j]
	e.groupRows[j] = g.rows // kept for the next event
	if len(g.rows) == 0 {
		return arena, spans, nil
	}
	bound := tg.GroupBytes
	if bound <= 0 {
		bound = DefaultGroupBytes
	}
	e.row.Meta = ev.Meta
	e.row.Before.i, e.row.After.i = g.rows[0].bi, g.rows[0].ai
	headRoom := len(g.f.AppendGroupHead(e.ghead[:0], &e.row, 0)) + groupHeadRoom
	groups := e.gsets[:0]
	for i := range g.rows {
		r := &g.rows[i]
		size := r.pEnd - r.pStart
		at := -1
		if g.known {
			for gi := len(groups) - 1; gi >= 0; gi-- { // the latest open group of the partition
				if groups[gi].open && groups[gi].part == r.part {
					at = gi
					break
				}
			}
		}
		if at >= 0 {
			first := &g.rows[groups[at].first]
			if (first.kEnd-first.kStart)+headRoom+groups[at].bytes+size > bound {
				groups[at].open = false // full: the partition's next rows start another
				at = -1
			}
		}
		if at < 0 {
			groups = append(groups, group{part: r.part, first: int32(i), last: int32(i), open: g.known})
			at = len(groups) - 1
		} else {
			g.rows[groups[at].last].next = int32(i)
			groups[at].last = int32(i)
		}
		groups[at].bytes += size
		groups[at].rows++
	}
	e.gsets = groups
	for _, gr := range groups {
		first, last := &g.rows[gr.first], &g.rows[gr.last]
		m := ev.Meta
		if last.commit {
			m.Commit, m.XID = true, xid
		}
		e.row.Meta = m
		e.row.Before.i, e.row.After.i = first.bi, first.ai
		vStart := len(arena)
		arena = g.f.AppendGroupHead(arena, &e.row, gr.bytes)
		for i := gr.first; i >= 0; i = g.rows[i].next {
			arena = append(arena, e.gbuf[g.rows[i].pStart:g.rows[i].pEnd]...)
		}
		vEnd := len(arena)
		kStart := len(arena)
		arena = append(arena, e.gbuf[first.kStart:first.kEnd]...)
		kEnd := len(arena)
		ok, err := keepMsg(keep, ev, arena[kStart:kEnd], arena[vStart:vEnd], m)
		if err != nil {
			return arena, spans, err
		}
		if !ok {
			arena = arena[:vStart]
			continue
		}
		spans = append(spans, msgSpan{by: g.k, kStart: kStart, kEnd: kEnd, vStart: vStart, vEnd: vEnd, rows: gr.rows})
	}
	return arena, spans, nil
}
