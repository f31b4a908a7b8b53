package capture

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/cluster"
)

// XA transactions. MySQL 5.7+ and MariaDB 10.5+ write an XA transaction in two event
// groups: at XA PREPARE its rows (MySQL: GTID, "XA START xid", rows, "XA END xid",
// XA_PREPARE_LOG_EVENT; MariaDB: a GTID event flagged FL_PREPARED_XA, rows, "XA END
// xid", XA_PREPARE_LOG_EVENT), and later, after any number of other transactions, a group
// of its own with "XA COMMIT xid" or "XA ROLLBACK xid". MySQL writes XA COMMIT … ONE
// PHASE as the first group, its XA_PREPARE_LOG_EVENT flagged one-phase; MariaDB writes it
// as an ordinary transaction (BEGIN … XID). An XA transaction rolled back before XA
// PREPARE leaves nothing in the binlog.
//
// So the capture holds the row messages of a prepared part in memory and publishes them
// at its XA COMMIT (the last row says commit: true, as in any transaction), or drops them
// at its XA ROLLBACK. While one is held, the offset stays at the boundary before the
// earliest prepared part still held: a restart reads it again, so that a crash between
// XA PREPARE and XA COMMIT neither loses its rows nor publishes rolled-back ones (the
// transactions read after it are published again: at least once). A transaction
// resolved after that boundary although prepared before it (XA transactions overlap) is
// named in the offset's XADone, so that a capture resuming there knows its XA COMMIT for
// one already published. The held messages are bounded by Options.XAHoldBytes; past it,
// on_unreadable decides (stop, or drop that transaction's rows and count them).

// ErrXAUnreadable is the fatal error of an instance that met an XA transaction it cannot
// publish correctly while on_unreadable is "stop": an XA COMMIT whose prepared rows the
// capture never read (prepared before its start position), a prepared transaction past
// the bound on held rows, or an XA event it cannot decode.
var ErrXAUnreadable = errors.New("XA transaction whose rows cannot be published")

// MariaDB's GTID event flags of XA event groups (log_event.h), which go-mysql does not
// name.
const (
	mariadbFlPreparedXA  = 0x40 // the group is an XA transaction's prepared part
	mariadbFlCompletedXA = 0x80 // the group is an XA COMMIT or XA ROLLBACK
)

// DefaultXAHoldBytes bounds the row messages an instance holds for its prepared XA
// transactions, when Options.XAHoldBytes is 0.
const DefaultXAHoldBytes = 64 << 20

// xid identifies an XA transaction.
type xid struct {
	formatID     int64
	gtrid, bqual string
}

// String is the xid as the server writes it in XA statements.
func (x xid) String() string {
	return fmt.Sprintf("X'%s',X'%s',%d", hex.EncodeToString([]byte(x.gtrid)), hex.EncodeToString([]byte(x.bqual)), x.formatID)
}

// xaTxn is an XA transaction whose prepared part was read.
type xaTxn struct {
	xid  xid
	gtid string
	// hold is the boundary before its prepared part: where a capture that is to see it
	// must resume. seq is the number (Capture.evSeq) of the event it began with.
	hold cluster.Position
	seq  uint64
	at   string // file:pos of its XA PREPARE
	// items are its row messages, the last row flagged commit; dropped: past the bound,
	// on_unreadable: skip dropped them.
	items   []Item
	bytes   int
	dropped bool
	since   time.Time
}

// xaCommitted is an XA transaction whose XA COMMIT was read: prepSeq and seq number the
// events its prepared part began with (0: before the capture's start) and its XA COMMIT.
type xaCommitted struct {
	xid          xid
	prepSeq, seq uint64
}

// xaBegin: the group being read is an XA transaction's prepared part; its row messages
// are held (emit) until its XA COMMIT.
func (c *Capture) xaBegin() {
	if c.xa == nil {
		c.xa = &xaTxn{gtid: c.txGTID, seq: c.evSeq, hold: c.resume}
	}
}

// dropOpenXA forgets the prepared part being read (a reconnect reads it again).
func (c *Capture) dropOpenXA() {
	if c.xa != nil {
		c.heldBytes -= c.xa.bytes
		c.xa = nil
	}
}

// emit sends an item of row messages, or holds it while an XA transaction's prepared
// part is read.
func (c *Capture) emit(ctx context.Context, it Item) error {
	x := c.xa
	if x == nil {
		c.txEmitted = true
		return c.send(ctx, it)
	}
	if x.dropped {
		return nil
	}
	if limit := c.xaHoldBytes(); c.heldBytes+it.Bytes > limit {
		if c.Inst.OnUnreadable != cluster.UnreadableSkip {
			return &fatalError{fmt.Errorf("%w: the XA transaction begun after %s (gtid %s) would hold more than %d bytes of row messages "+
				"(pipeline.xa_hold_bytes, with the other prepared ones) until its XA COMMIT; raise it, or on_unreadable: skip to drop such a transaction's rows",
				ErrXAUnreadable, x.hold.String(), x.gtid, limit)}
		}
		c.Log.Warn("XA transaction too large to hold until its XA COMMIT: its rows will not be published if it commits (on_unreadable: skip)",
			"gtid", x.gtid, "after", x.hold.String(), "held_bytes", c.heldBytes+it.Bytes, "limit", limit)
		c.heldBytes -= x.bytes
		x.items, x.bytes, x.dropped = nil, 0, true
		return nil
	}
	x.items = append(x.items, it)
	x.bytes += it.Bytes
	c.heldBytes += it.Bytes
	return nil
}

func (c *Capture) xaHoldBytes() int {
	if c.XAHoldBytes > 0 {
		return c.XAHoldBytes
	}
	return DefaultXAHoldBytes
}

// xaPrepare handles an XA_PREPARE_LOG_EVENT: the end of a prepared part, which is held
// until its XA COMMIT, or (one-phase) a committed XA transaction.
func (c *Capture) xaPrepare(ctx context.Context, h *replication.EventHeader, data []byte) error {
	x, onePhase, err := parseXAPrepare(data)
	if err != nil {
		return &fatalError{fmt.Errorf("%w: XA PREPARE event at %s:%d: %v", ErrXAUnreadable, c.file, h.LogPos, err)}
	}
	if c.xa == nil {
		if c.txEmitted {
			return &fatalError{fmt.Errorf("%w: XA PREPARE %s at %s:%d ends a group that did not begin as an XA transaction's: its rows were published already",
				ErrXAUnreadable, x, c.file, h.LogPos)}
		}
		c.xaBegin()
	}
	if err := c.flush(ctx, true, 0); err != nil { // the last row, held, says commit
		return err
	}
	t := c.xa
	c.xa, t.xid = nil, x
	if onePhase {
		c.heldBytes -= t.bytes
		if err := c.publishHeld(ctx, t, h); err != nil {
			return err
		}
		return c.endTxn(ctx, h, 0)
	}
	t.at, t.since = fmt.Sprintf("%s:%d", c.file, h.LogPos), time.Now()
	c.prepared = append(c.prepared, t)
	// The boundary: a reconnect reads on from here; the offset stays before the
	// prepared part (offset).
	return c.endTxn(ctx, h, 0)
}

// xaQuery handles an XA statement of a query event: XA START (MySQL) begins a prepared
// part; XA COMMIT and XA ROLLBACK end a prepared transaction, in an event group of their
// own.
func (c *Capture) xaQuery(ctx context.Context, h *replication.EventHeader, st statement) error {
	switch st.verb {
	case "START", "BEGIN":
		c.xaBegin()
		return nil
	case "COMMIT", "ROLLBACK":
	default: // END; PREPARE and RECOVER are not written as queries
		return nil
	}
	commit := st.verb == "COMMIT"
	x, err := parseXID(st.rest)
	if err != nil {
		return &fatalError{fmt.Errorf("%w: XA %s at %s:%d: %v", ErrXAUnreadable, st.verb, c.file, h.LogPos, err)}
	}
	if t := c.xa; t != nil {
		// The group is the XA transaction itself (XA COMMIT … ONE PHASE or XA ROLLBACK
		// written as a query after its rows): no server is known to write this.
		if err := c.flush(ctx, true, 0); err != nil {
			return err
		}
		c.dropOpenXA()
		if commit {
			if err := c.publishHeld(ctx, t, h); err != nil {
				return err
			}
		}
		return c.endTxn(ctx, h, 0)
	}
	if i := slices.IndexFunc(c.prepared, func(t *xaTxn) bool { return t.xid == x }); i >= 0 {
		t := c.prepared[i]
		c.prepared = slices.Delete(c.prepared, i, i+1)
		c.heldBytes -= t.bytes
		if commit {
			c.xaCommitted = append(c.xaCommitted, xaCommitted{x, t.seq, c.evSeq})
			if err := c.publishHeld(ctx, t, h); err != nil {
				return err
			}
		}
		return c.endTxn(ctx, h, 0)
	}
	switch {
	case !commit:
		// Rolled back, and nothing of it was published: its prepared part is before
		// where the capture started.
	case c.xaDone[x]:
		// Published before the restart: the offset was held before this transaction's
		// XA COMMIT, but after its XA PREPARE.
		delete(c.xaDone, x)
		c.xaCommitted = append(c.xaCommitted, xaCommitted{x, 0, c.evSeq})
	case c.Inst.OnUnreadable == cluster.UnreadableSkip:
		c.Log.Warn("XA COMMIT of a transaction prepared before the capture's start: its rows were never read and are not published (on_unreadable: skip)",
			"xid", x.String(), "file", c.file, "pos", h.LogPos)
		if c.OnUnreadable != nil {
			c.OnUnreadable()
		}
	default:
		return &fatalError{fmt.Errorf("%w: XA COMMIT %s at %s:%d: its XA PREPARE is before the position the capture started from, so its rows were never read; "+
			"start the instance from a position before that XA PREPARE, or on_unreadable: skip to go on without them", ErrXAUnreadable, x, c.file, h.LogPos)}
	}
	return c.endTxn(ctx, h, 0)
}

// publishHeld sends a committed XA transaction's row messages.
func (c *Capture) publishHeld(ctx context.Context, t *xaTxn, h *replication.EventHeader) error {
	if t.dropped {
		c.Log.Warn("XA COMMIT of a transaction too large to hold: its rows are not published (on_unreadable: skip)",
			"xid", t.xid.String(), "gtid", t.gtid, "prepared_at", t.at, "file", c.file, "pos", h.LogPos)
		if c.OnUnreadable != nil {
			c.OnUnreadable()
		}
		return nil
	}
	for _, it := range t.items {
		if err := c.send(ctx, it); err != nil {
			return err
		}
	}
	return nil
}

// offset is the position a transaction boundary commits: the boundary read (c.resume),
// or while prepared XA transactions are held, the boundary before the earliest, with the
// XA transactions committed since that a capture resuming there will meet again.
func (c *Capture) offset() cluster.Position {
	p := c.resume
	var done []string
	holdSeq := uint64(math.MaxUint64)
	if len(c.prepared) > 0 {
		t := c.prepared[0]
		p.File, p.Pos, p.GTIDSet, p.TS = t.hold.File, t.hold.Pos, t.hold.GTIDSet, t.hold.TS
		holdSeq = t.seq
		if now := time.Now(); now.Sub(t.since) > time.Minute && now.Sub(c.xaWarned) > time.Minute {
			c.xaWarned = now
			c.Log.Warn("a prepared XA transaction holds the instance's offset until its XA COMMIT or ROLLBACK: a restart reads the binlog again from before it",
				"xid", t.xid.String(), "gtid", t.gtid, "prepared_at", t.at, "for", now.Sub(t.since).Round(time.Second),
				"prepared", len(c.prepared), "held_bytes", c.heldBytes, "offset", p.String())
		}
	}
	keep := c.xaCommitted[:0]
	for _, r := range c.xaCommitted {
		if r.seq < holdSeq {
			continue // read before the offset: a capture resuming there never meets it
		}
		keep = append(keep, r)
		if r.prepSeq < holdSeq {
			done = append(done, r.xid.String())
		}
	}
	c.xaCommitted = keep
	for x := range c.xaDone {
		done = append(done, x.String())
	}
	slices.Sort(done)
	p.XADone = strings.Join(done, " ")
	return p
}

// parseXAPrepare decodes an XA_PREPARE_LOG_EVENT's body (MySQL and MariaDB alike): one
// byte one-phase, then the xid: format id, gtrid and bqual lengths (4 bytes each) and
// their bytes.
func parseXAPrepare(data []byte) (x xid, onePhase bool, err error) {
	if len(data) < 13 {
		return x, false, fmt.Errorf("%d bytes, want at least 13", len(data))
	}
	g, b := binary.LittleEndian.Uint32(data[5:]), binary.LittleEndian.Uint32(data[9:])
	if g > 64 || b > 64 || len(data) < 13+int(g+b) {
		return x, false, fmt.Errorf("xid of %d+%d bytes in %d", g, b, len(data))
	}
	x.formatID = int64(int32(binary.LittleEndian.Uint32(data[1:])))
	x.gtrid, x.bqual = string(data[13:13+g]), string(data[13+g:13+g+b])
	return x, data[0] != 0, nil
}

// parseXID reads the xid an XA statement names: gtrid [, bqual [, formatID]], each string
// in quotes or hexadecimal (X'…', 0x…), as the server writes it (X'…',X'…',n); what
// follows (ONE PHASE) is left.
func parseXID(s string) (xid, error) {
	x := xid{formatID: 1}
	var err error
	i := skipSpace(s, 0)
	if x.gtrid, i, err = xidString(s, i); err != nil {
		return x, err
	}
	if i = skipSpace(s, i); i < len(s) && s[i] == ',' {
		if x.bqual, i, err = xidString(s, skipSpace(s, i+1)); err != nil {
			return x, err
		}
		if i = skipSpace(s, i); i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
			j := i
			if j < len(s) && s[j] == '-' {
				j++
			}
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if x.formatID, err = strconv.ParseInt(s[i:j], 10, 64); err != nil {
				return x, fmt.Errorf("xid %q: format id: %v", s, err)
			}
		}
	}
	return x, nil
}

// xidString reads a string literal of an xid at i: 'text', "text", X'hex' or 0xhex.
func xidString(s string, i int) (string, int, error) {
	rest := s[i:]
	switch {
	case len(rest) >= 2 && (rest[0] == 'X' || rest[0] == 'x') && rest[1] == '\'':
		end := strings.IndexByte(rest[2:], '\'')
		if end < 0 {
			return "", i, fmt.Errorf("xid %q: unterminated X'…'", s)
		}
		b, err := hex.DecodeString(rest[2 : 2+end])
		if err != nil {
			return "", i, fmt.Errorf("xid %q: %v", s, err)
		}
		return string(b), i + 2 + end + 1, nil
	case strings.HasPrefix(rest, "0x") || strings.HasPrefix(rest, "0X"):
		j := 2
		for j < len(rest) && strings.IndexByte("0123456789abcdefABCDEF", rest[j]) >= 0 {
			j++
		}
		h := rest[2:j]
		if len(h)%2 == 1 {
			h = "0" + h
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			return "", i, fmt.Errorf("xid %q: %v", s, err)
		}
		return string(b), i + j, nil
	case len(rest) > 0 && (rest[0] == '\'' || rest[0] == '"'):
		q := rest[0]
		var b strings.Builder
		for j := 1; j < len(rest); j++ {
			switch ch := rest[j]; {
			case ch == '\\' && j+1 < len(rest):
				j++
				b.WriteByte(rest[j])
			case ch == q && j+1 < len(rest) && rest[j+1] == q:
				j++
				b.WriteByte(q)
			case ch == q:
				return b.String(), i + j + 1, nil
			default:
				b.WriteByte(ch)
			}
		}
		return "", i, fmt.Errorf("xid %q: unterminated string", s)
	}
	return "", i, fmt.Errorf("xid %q: want a quoted or hexadecimal string", s)
}
