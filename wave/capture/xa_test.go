package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/cluster"
)

// xaPrepareEv is an XA_PREPARE_LOG_EVENT of xid gtrid (”, 1).
func xaPrepareEv(gtrid string, onePhase bool) *replication.GenericEvent {
	d := make([]byte, 13, 13+len(gtrid))
	if onePhase {
		d[0] = 1
	}
	binary.LittleEndian.PutUint32(d[1:], 1)
	binary.LittleEndian.PutUint32(d[5:], uint32(len(gtrid)))
	return &replication.GenericEvent{Data: append(d, gtrid...)}
}

// xaPrepared feeds MySQL's prepared part of XA transaction gtrid (one hex digit pair:
// "a" is X'61') from pos on, with the given rows; it ends at pos+40.
func (f *eventFeed) xaPrepared(pos uint32, gtrid string, rows ...string) {
	f.t.Helper()
	x := xid{formatID: 1, gtrid: gtrid}.String()
	f.ev(pos, gtidEv())
	f.ev(pos+10, query("XA START "+x))
	for _, r := range rows {
		f.row(r)
	}
	f.ev(pos+30, query("XA END "+x))
	f.ev(pos+40, xaPrepareEv(gtrid, false))
}

// xaEnd feeds the group of XA COMMIT or XA ROLLBACK (verb) of gtrid, ending at pos+10.
func (f *eventFeed) xaEnd(pos uint32, verb, gtrid string) error {
	f.t.Helper()
	f.ev(pos, gtidEv())
	return f.try(pos+10, query("XA "+verb+" "+xid{formatID: 1, gtrid: gtrid}.String()))
}

// TestXACommitAndRollback: a prepared XA transaction's rows wait for its XA COMMIT and
// are published then; a rolled-back one's never are; meanwhile the offset stays before
// the prepared part, and other transactions are published as they come.
func TestXACommitAndRollback(t *testing.T) {
	f := newEventFeed(t, start4(), "", 0)
	f.xaPrepared(100, "a", "a1", "a2")
	f.want("@4")
	f.txn(200, "n1")
	f.want("n1", "@4")
	if err := f.xaEnd(300, "COMMIT", "a"); err != nil {
		t.Fatal(err)
	}
	f.want("a1", "a2", "@310")
	f.xaPrepared(400, "b", "b1")
	f.want("@310")
	if err := f.xaEnd(500, "ROLLBACK", "b"); err != nil {
		t.Fatal(err)
	}
	f.want("@510")
	if f.c.heldBytes != 0 || len(f.c.prepared) != 0 {
		t.Errorf("held %d bytes, %d prepared", f.c.heldBytes, len(f.c.prepared))
	}
}

// TestXAOnePhase: MySQL's XA COMMIT … ONE PHASE (a prepare event flagged one-phase) is a
// committed transaction.
func TestXAOnePhase(t *testing.T) {
	f := newEventFeed(t, start4(), "", 0)
	f.ev(100, gtidEv())
	f.ev(110, query("XA START X'63',X'',1"))
	f.row("c1")
	f.ev(130, query("XA END X'63',X'',1"))
	f.want()
	f.ev(140, xaPrepareEv("c", true))
	f.want("c1", "@140")
}

// TestXAOverlapRestart: XA transactions overlap. While b is prepared, the offset is held
// before it, and names a, committed after that point though prepared before it; a
// capture resuming there passes a's XA COMMIT by, and publishes b at its XA COMMIT.
func TestXAOverlapRestart(t *testing.T) {
	f := newEventFeed(t, start4(), "", 0)
	f.xaPrepared(100, "a", "a1")
	f.xaPrepared(200, "b", "b1")
	f.want("@4", "@4")
	f.ev(300, gtidEv())
	f.ev(310, query("XA COMMIT X'61',X'',1"))
	f.want("a1", "@140+X'61',X'',1")
	f.txn(400, "n1")
	f.want("n1", "@140+X'61',X'',1")

	// A crash: a new capture resumes from the committed offset.
	g := newEventFeed(t, cluster.Position{File: "bin.000001", Pos: 140, XADone: "X'61',X'',1"}, "", 0)
	g.xaPrepared(200, "b", "b1")
	g.want("@140+X'61',X'',1")
	g.ev(300, gtidEv())
	g.ev(310, query("XA COMMIT X'61',X'',1"))
	g.want("@140+X'61',X'',1")
	g.txn(400, "n1")
	g.want("n1", "@140+X'61',X'',1")
	if err := g.xaEnd(500, "COMMIT", "b"); err != nil {
		t.Fatal(err)
	}
	g.want("b1", "@510")
}

// TestXACommitNotRead: an XA COMMIT whose prepared part the capture never read stops it,
// naming the xid and position; on_unreadable: skip goes on and counts it. An XA ROLLBACK
// of one is nothing.
func TestXACommitNotRead(t *testing.T) {
	f := newEventFeed(t, start4(), "", 0)
	if err := f.xaEnd(100, "ROLLBACK", "r"); err != nil {
		t.Fatal(err)
	}
	f.want("@110")
	err := f.xaEnd(200, "COMMIT", "z")
	if !errors.Is(err, ErrXAUnreadable) || !IsFatal(err) || !strings.Contains(err.Error(), "XA COMMIT X'7a',X'',1 at bin.000001:210") {
		t.Fatalf("err %v", err)
	}
	s := newEventFeed(t, start4(), cluster.UnreadableSkip, 0)
	if err := s.xaEnd(200, "COMMIT", "z"); err != nil {
		t.Fatal(err)
	}
	s.want("@210")
	if s.skipped != 1 {
		t.Errorf("skipped %d", s.skipped)
	}
}

// TestXAHoldBound: prepared rows past the bound stop the instance; with
// on_unreadable: skip that transaction's rows are dropped, and counted if it commits.
func TestXAHoldBound(t *testing.T) {
	f := newEventFeed(t, start4(), "", 10)
	f.ev(100, gtidEv())
	f.ev(110, query("XA START X'61',X'',1"))
	f.row("aaaa")
	err := f.c.emit(context.Background(), Item{Msgs: []bus.Message{{Value: []byte("bbbb")}}, Bytes: 8})
	if !errors.Is(err, ErrXAUnreadable) || !IsFatal(err) || !strings.Contains(err.Error(), "xa_hold_bytes") {
		t.Fatalf("err %v", err)
	}

	s := newEventFeed(t, start4(), cluster.UnreadableSkip, 10)
	s.xaPrepared(100, "a", "aaaa", "bbbb")
	s.xaPrepared(200, "b", "cc")
	s.want("@4", "@4")
	if s.c.heldBytes != 4 {
		t.Errorf("held %d bytes, want b's 4", s.c.heldBytes)
	}
	if err := s.xaEnd(300, "COMMIT", "a"); err != nil {
		t.Fatal(err)
	}
	s.want("@140+X'61',X'',1") // a resumed capture passes a's XA COMMIT by: counted once
	if err := s.xaEnd(400, "COMMIT", "b"); err != nil {
		t.Fatal(err)
	}
	s.want("cc", "@410")
	if s.skipped != 1 {
		t.Errorf("skipped %d", s.skipped)
	}
}

// TestXAMariaDB: MariaDB flags the GTID event of a prepared part instead of writing XA
// START; the offset held before it keeps the GTID set before it.
func TestXAMariaDB(t *testing.T) {
	f := newEventFeed(t, cluster.Position{File: "bin.000001", Pos: 4, GTIDSet: "0-1-4"}, "", 0)
	f.ev(100, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 5}, Flags: 0x4c})
	f.row("a1")
	f.ev(130, query("XA END X'61',X'',1"))
	f.ev(140, xaPrepareEv("a", false))
	it := <-f.out
	if it.Commit == nil || it.Commit.Pos != 4 || it.Commit.GTIDSet != "0-1-4" {
		t.Fatalf("offset while prepared: %+v", it.Commit)
	}
	f.ev(200, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 6}, Flags: 0x8d})
	f.ev(210, query("XA ROLLBACK X'61',X'',1"))
	it = <-f.out
	if len(it.Msgs) != 0 || it.Commit == nil || it.Commit.Pos != 210 || it.Commit.GTIDSet != "0-1-6" {
		t.Fatalf("after XA ROLLBACK: %d messages, offset %+v", len(it.Msgs), it.Commit)
	}
}

// TestXAReconnect: a reconnect in the middle of a prepared part reads it again; the
// prepared transactions before stay held.
func TestXAReconnect(t *testing.T) {
	f := newEventFeed(t, start4(), "", 0)
	f.xaPrepared(100, "a", "a1")
	f.ev(200, gtidEv())
	f.ev(210, query("XA START X'62',X'',1"))
	f.row("b1")
	f.c.dropOpenXA() // as session does
	f.c.inTxn = false
	f.xaPrepared(200, "b", "b1")
	if f.c.heldBytes != 8 || len(f.c.prepared) != 2 {
		t.Fatalf("held %d bytes, %d prepared", f.c.heldBytes, len(f.c.prepared))
	}
	f.items()
	if err := f.xaEnd(300, "COMMIT", "b"); err != nil {
		t.Fatal(err)
	}
	if err := f.xaEnd(400, "COMMIT", "a"); err != nil {
		t.Fatal(err)
	}
	f.want("b1", "@4", "a1", "@410")
}

func TestParseXID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want xid
	}{
		{"X'61',X'',1", xid{1, "a", ""}},
		{"X'6162',X'63',3 ONE PHASE", xid{3, "ab", "c"}},
		{"'ab'", xid{1, "ab", ""}},
		{"'a''b', \"c\", -1", xid{-1, "a'b", "c"}},
		{"0x6162 , 0x63", xid{1, "ab", "c"}},
	} {
		got, err := parseXID(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
		if back, err := parseXID(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v %v", tc.in, got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "abc", "X'6", "X'zz'", "'open", "'a',X'62',x"} {
		if _, err := parseXID(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseXAPrepare(t *testing.T) {
	// The body MariaDB 10.11 wrote for XA PREPARE 'a' (checksum stripped).
	x, one, err := parseXAPrepare([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a'})
	if err != nil || one || x != (xid{1, "a", ""}) {
		t.Fatalf("%+v %v %v", x, one, err)
	}
	for _, bad := range [][]byte{nil, {0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 'a'}, {0, 1, 0, 0, 0, 65, 0, 0, 0, 0, 0, 0, 0}} {
		if _, _, err := parseXAPrepare(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
