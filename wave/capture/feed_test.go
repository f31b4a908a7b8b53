package capture

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/cluster"
)

// eventFeed hands a capture binlog events one by one, as a session would (without a
// source: the rows of a transaction are stood in for by row(), the item a rows event's
// flush sends).
type eventFeed struct {
	t       *testing.T
	c       *Capture
	out     chan Item
	skipped int
}

func newEventFeed(t *testing.T, start cluster.Position, onUnreadable string, holdBytes int, include ...string) *eventFeed {
	t.Helper()
	f := &eventFeed{t: t, out: make(chan Item, 100)}
	filter, err := cluster.NewFilter([]cluster.Subscription{{Name: "s", Topic: "rows", Include: include}})
	if err != nil {
		t.Fatal(err)
	}
	inst := &cluster.Instance{ID: "x", OnUnreadable: onUnreadable, Source: cluster.Source{Flavor: cluster.FlavorMySQL}}
	if start.GTIDSet != "" {
		inst.Source.Flavor = cluster.FlavorMariaDB // the tests' GTID sets are MariaDB's
	}
	f.c, err = New(Options{Inst: inst, Filter: filter, Out: f.out, Log: slog.New(slog.DiscardHandler),
		XAHoldBytes: holdBytes, OnUnreadable: func() { f.skipped++ }}, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.c.sc.close)
	f.c.file = start.File
	return f
}

// ev handles one event ending at pos; it fails the test on an error.
func (f *eventFeed) ev(pos uint32, e replication.Event) {
	f.t.Helper()
	if err := f.try(pos, e); err != nil {
		f.t.Fatalf("event at %d: %v", pos, err)
	}
}

func (f *eventFeed) try(pos uint32, e replication.Event) error {
	h := &replication.EventHeader{LogPos: pos, Timestamp: 1000 + pos}
	switch e.(type) {
	case *replication.QueryEvent:
		h.EventType = replication.QUERY_EVENT
	case *replication.GenericEvent:
		h.EventType = replication.XA_PREPARE_LOG_EVENT
	case *replication.XIDEvent:
		h.EventType = replication.XID_EVENT
	}
	return f.c.handle(context.Background(), &replication.BinlogEvent{Header: h, Event: e})
}

// row stands for a rows event of the current transaction: one message with value v.
func (f *eventFeed) row(v string) {
	f.t.Helper()
	f.c.inTxn = true
	if err := f.c.emit(context.Background(), Item{Msgs: []bus.Message{{Topic: "rows", Key: []byte(v), Value: []byte(v)}}, Bytes: 2 * len(v)}); err != nil {
		f.t.Fatal(err)
	}
}

// items returns what the capture sent since the last call: each row message's value,
// and "@pos" (with "+xa_done" when it has one) for each commit.
func (f *eventFeed) items() []string {
	var got []string
	for {
		select {
		case it := <-f.out:
			for _, m := range it.Msgs {
				got = append(got, string(m.Value))
			}
			if it.Commit != nil {
				s := "@" + strconv.FormatUint(uint64(it.Commit.Pos), 10)
				if it.Commit.XADone != "" {
					s += "+" + it.Commit.XADone
				}
				got = append(got, s)
			}
		default:
			return got
		}
	}
}

func (f *eventFeed) want(want ...string) {
	f.t.Helper()
	got := f.items()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		f.t.Fatalf("sent %q, want %q", got, want)
	}
}

var gno int64

func gtidEv() *replication.GTIDEvent {
	gno++
	return &replication.GTIDEvent{SID: make([]byte, 16), GNO: gno}
}

func query(sql string) *replication.QueryEvent {
	return &replication.QueryEvent{Schema: []byte("d"), Query: []byte(sql)}
}

// txn feeds an ordinary transaction with the given rows, ending at pos+20.
func (f *eventFeed) txn(pos uint32, rows ...string) {
	f.t.Helper()
	f.ev(pos, gtidEv())
	f.ev(pos+10, query("BEGIN"))
	for _, r := range rows {
		f.row(r)
	}
	f.ev(pos+20, &replication.XIDEvent{XID: 7})
}

func start4() cluster.Position { return cluster.Position{File: "bin.000001", Pos: 4} }

// TestCompressedTransaction: a MySQL 8 transaction compressed into a payload event
// (binlog_transaction_compression) is handled event by event, as go-mysql decodes it:
// its commit comes at the payload's end.
func TestCompressedTransaction(t *testing.T) {
	f := newEventFeed(t, start4(), "", 0)
	f.ev(100, gtidEv())
	inner := func(pos uint32, typ replication.EventType, e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{LogPos: pos, EventType: typ, Timestamp: 1100}, Event: e}
	}
	payload := &replication.TransactionPayloadEvent{Events: []*replication.BinlogEvent{
		inner(100, replication.QUERY_EVENT, query("BEGIN")),
		inner(180, replication.XID_EVENT, &replication.XIDEvent{XID: 9}),
	}}
	f.ev(180, payload)
	f.want("@180")
	f.txn(200, "n1")
	f.want("n1", "@220")
}
