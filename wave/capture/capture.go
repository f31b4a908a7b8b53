// Package capture reads an instance's source: one binlog connection at a time with its
// reconnects, the schema and DDL that name and type the columns, the start position,
// snapshots of the existing rows, and the lag of a leadership term. It hands the wave's
// pipeline Items: the messages of a rows event (encoded by wave/rowenc) and the
// transaction boundaries to commit.
package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// ErrBinlogPurged is the fatal error of an instance whose resume position is no longer on
// the source (MySQL error 1236). Capture stops; it never skips ahead silently.
var ErrBinlogPurged = errors.New("binlog position not available on the source (error 1236)")

// ErrPositionUnserved is the fatal error of an instance whose resume position the
// source has in its binlog but cannot serve from (MySQL error 1236 for another cause
// than a purge): a file position that is not an event's start, a GTID the source never
// wrote. Every 1236 was ErrBinlogPurged, whose remedy (a snapshot from the source's end)
// is not the fix for a wrong start (an outside trial).
var ErrPositionUnserved = errors.New("the source cannot send its binlog from this position (error 1236)")

// purgedMessages are what the sources say in a 1236 when the binlog the position is in
// is gone: MySQL's and MariaDB's file and GTID forms.
var purgedMessages = []string{
	"could not find first log file name",  // the file is not in the index
	"purged",                              // MySQL: "... has purged binary logs containing GTIDs ..."
	"could not find gtid state requested", // MariaDB: "... required binlog files have been purged"
	"binary log is not open",
}

// isPurged reports whether msg, a 1236's text, says the binlog is gone.
func isPurged(msg string) bool {
	msg = strings.ToLower(msg)
	for _, p := range purgedMessages {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// ErrServerIDClash is the error of a binlog connection the source ended because another
// replica connected with the same server_id: MariaDB's ERROR 4052, MySQL's ERROR 1236 "A
// slave with the same server_uuid/server_id". Another instance on the same source with
// the same server_id, or a real replica's. Retried, not fatal: it clears once the other
// goes, and meanwhile each connection ends the other's (the reconnects back off).
var ErrServerIDClash = errors.New("another replica connected to the source with this server_id: give each instance and replica of a source its own")

// errSlaveSameID is MariaDB's ER_SLAVE_SAME_ID (go-mysql has no name for it).
const errSlaveSameID = 4052

// IsServerIDClash reports whether err is, or is the source's error of, a server_id clash
// (ErrServerIDClash): MySQL's has the code of a purged binlog (1236), and only its text
// tells them apart.
func IsServerIDClash(err error) bool {
	var me *mysql.MyError
	return err != nil && (errors.Is(err, ErrServerIDClash) ||
		(errors.As(err, &me) && me.Code == errSlaveSameID) || strings.Contains(err.Error(), "same server_uuid/server_id"))
}

// ErrMessageTooLarge is the fatal error of an instance that met a row message larger than
// the sink accepts while on_too_large is "stop".
var ErrMessageTooLarge = errors.New("row message larger than the sink accepts")

// fatalError marks errors that retrying cannot fix.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Fatal marks err as an error that retrying cannot fix: the instance stops.
func Fatal(err error) error { return &fatalError{err} }

// IsFatal reports whether err, or an error it wraps, was marked Fatal.
func IsFatal(err error) bool {
	var f *fatalError
	return errors.As(err, &f)
}

// Item is what the capture stage hands the publisher: the messages of one rows event,
// and/or a transaction boundary reached after them.
type Item struct {
	Msgs []bus.Message
	// ExtraRows is how many more row changes Msgs carry than one per message: a group
	// message (rowenc.GroupFormat) carries several. Rows counts them.
	ExtraRows int
	Bytes     int
	Commit    *cluster.Position // the boundary after Msgs: safe to resume from once Msgs are acknowledged
	TS        int64             // binlog timestamp of the newest event in the item (a heartbeat's: when it came)
	// Heartbeat is the number (LagTracker.Saw) of the source heartbeat the item stands
	// for: the source had nothing newer then. 0: not a heartbeat.
	Heartbeat uint64
}

// Rows is the number of row changes (and DDL messages) the item's messages carry: what
// the publisher counts as published rows.
func (it *Item) Rows() int { return len(it.Msgs) + it.ExtraRows }

// Options configures the capture stage.
type Options struct {
	Inst     *cluster.Instance
	Password string
	// Secret, when set, resolves the source's password again before each binlog
	// connection (and the schema and snapshot connections opened after it), replacing
	// Password: a password file or variable fixed while the instance runs is used at the
	// next reconnect, not only after the wave restarts. An error is retried like a
	// refused connection.
	Secret   func() (string, error)
	Filter   *cluster.Filter
	Log      *slog.Logger
	Out      chan<- Item
	MaxBytes int // largest key+value accepted; 0 = unlimited
	// MaxBytesFrom says where MaxBytes comes from, for the error of a row above it
	// ("the sink's max_message_bytes" when empty).
	MaxBytesFrom string
	// Partitioner tells the partition of a topic a key goes to, as the publisher's bus
	// will send it: the rows of a grouping format go one message per event and partition
	// (grouping.go). nil: one message per row.
	Partitioner bus.Partitioner
	OnSkip      func()
	// OnUnreadable is told of each change dropped with on_unreadable: skip (a data change
	// logged as a statement, an XA transaction's rows that could not be read or held).
	OnUnreadable func()
	// XAHoldBytes bounds the row messages held for prepared XA transactions until their
	// XA COMMIT (xa.go); 0: DefaultXAHoldBytes.
	XAHoldBytes int
	OnError     func(error) // a retried error (reconnects): counted and shown in status
	OnConn      func()      // connected: the first event past the stream's start (clears a retried error from status)
	// backoff bounds for reconnecting to the source
	BackoffMin, BackoffMax time.Duration
	EventQueue             int
	Heartbeat              time.Duration
	Lag                    *LagTracker // counts the events read (nil: no lag kept)
	// OnRead is told the size of every binlog event the source sends, the tables no
	// subscription takes included: what reading the source costs beside what is
	// published (nil: not counted).
	OnRead func(bytes int)
	// Snapshot: the instance's snapshot options, the requests the leader polls from the
	// coordinator, and a callback with the progress (rows emitted, tables left).
	Snapshot         *cluster.SnapshotOptions
	SnapshotRequests <-chan cluster.SnapshotRequest
	OnSnapshot       func(rows, tablesLeft int)
}

// Capture reads the source's binlog and turns it into items. It reconnects by itself
// (from the last transaction boundary it read) on connection errors, with backoff.
type Capture struct {
	Options
	sc *schema
	ep Endpoint // the last session's (endpoint)

	// resume is the last transaction boundary read: where a reconnect starts.
	resume cluster.Position
	gset   mysql.GTIDSet // GTID set at resume (nil when the source has no GTIDs known)
	// gtidLookedUp: the GTID set of a file/pos start was asked for (onConnect); announce:
	// it was found and is still to be committed, so that a restart resumes by GTID too.
	gtidLookedUp, announce bool
	// settingsOf is the server whose binlog settings were checked (warnSourceSettings).
	settingsOf string

	// per connection
	file   string
	tables map[uint64]*rowenc.Table
	// unwanted are the table maps of tables no subscription takes (and no snapshot reads),
	// by table id: their rows are skipped, so their schema is not looked up (a query to
	// information_schema per table, and warnings of grants on tables it does not read).
	unwanted map[uint64]*replication.TableMapEvent
	reader   *rowenc.Reader // the rows events' row images
	// snapReader reads the rows only a snapshot needs (their keys), beside reader's held
	// rows.
	snapReader *rowenc.Reader
	// readPos is where the binlog was read to: the end of the last event handled.
	readPos cluster.Position
	// seen is the number (LagTracker.Saw) of the event being handled.
	seen      uint64
	ddlTables *ddlParser
	snap      *snapshotRun // snapshotcapture.go
	keyBuf    []byte
	// checksum: the binlog's events end in a CRC32 (its format description says)
	checksum bool
	// evSeq numbers the events handled, across reconnects (xa.go orders groups by it).
	evSeq uint64
	// XA transactions (xa.go): the prepared part being read, those prepared and waiting
	// for their XA COMMIT or ROLLBACK (in binlog order) and the bytes they hold, those
	// committed that the offset may have to name, and those the start position names.
	xa          *xaTxn
	prepared    []*xaTxn
	heldBytes   int
	xaCommitted []xaCommitted
	xaDone      map[xid]bool
	xaWarned    time.Time
	// per transaction
	inTxn bool
	// inGroup: the transaction is a BEGIN … COMMIT group (MySQL's BEGIN query, MariaDB's
	// GTID event not flagged standalone), which a statement in it does not end.
	inGroup bool
	// txEmitted: row messages of the transaction were sent.
	txEmitted bool
	// savepoint: the transaction logged a SAVEPOINT (rollback.go); afterSavepoint: rows
	// of a subscribed table were read since.
	savepoint, afterSavepoint bool
	txGTID                    string
	pending                   *rowsBatch      // the last rows event, held back to flag the transaction's last row
	enc                       rowenc.Encoder  // flush's encoder
	targets                   []rowenc.Target // and its scratch: each subscription's partitioning and format
	txGSet                    mysql.GTIDSet
	// partitions is each topic's Target.Partition (grouping.go); encodeCtx the context
	// of the encoding under way, in which they ask the bus.
	partitions map[string]*topicPartitions
	encodeCtx  context.Context

	// runSession and now stand for session and time.Now in Run when runSession is set
	// (reconnect_test.go).
	runSession func(context.Context) (read bool, err error)
	now        func() time.Time

	// slowStarts is how many sessions in a row timed out before the source sent anything
	// past the stream's first events (readtimeout.go).
	slowStarts uint
}

// rowsBatch is a rows event read but not yet encoded, and the subscriptions it goes to.
type rowsBatch struct {
	rowenc.Event
	subs []int
}

func New(o Options, start cluster.Position) (*Capture, error) {
	c := &Capture{Options: o, resume: start, ddlTables: newDDLParser(), xaDone: map[xid]bool{}}
	for _, s := range strings.Fields(start.XADone) {
		x, err := parseXID(s)
		if err != nil {
			return nil, &fatalError{fmt.Errorf("offset xa_done %q: %w", s, err)}
		}
		c.xaDone[x] = true
	}
	c.resume.XADone = ""
	// Without the TLS files yet: each session reads them (endpoint) before anything connects.
	ep := Endpoint{Addr: o.Inst.Source.Addr, User: o.Inst.Source.User, Password: o.Password}
	c.sc = newSchema(ep, o.Log)
	opts := o.Snapshot
	if opts == nil {
		opts = &cluster.SnapshotOptions{}
	}
	c.snap = &snapshotRun{src: snapshotSource{ep: ep},
		opts: opts, requests: o.SnapshotRequests, touched: map[string]time.Time{}, onRows: o.OnSnapshot, lastLog: time.Now()}
	if start.GTIDSet != "" {
		gs, err := mysql.ParseGTIDSet(o.Inst.Source.Flavor, start.GTIDSet)
		if err != nil {
			return nil, &fatalError{fmt.Errorf("offset gtid_set %q: %w", start.GTIDSet, err)}
		}
		c.gset = gs
	}
	return c, nil
}

// CurrentPosition asks the source where its binlog ends now: the start of a first
// capture.
func CurrentPosition(ctx context.Context, src cluster.Source, password string) (cluster.Position, error) {
	ep, err := EndpointOf(src, password)
	if err != nil {
		return cluster.Position{}, err
	}
	conn, err := ep.connect(ctx, 10*time.Second)
	if err != nil {
		return cluster.Position{}, fmt.Errorf("connect to %s: %w", ep, ServerError(err))
	}
	defer conn.Close()
	return positionNow(conn, src.Flavor)
}

// positionNow reads the end of conn's binlog and the GTID set there. The set must not be
// ahead of the file/pos: the capture resumes by GTID, and a transaction that committed
// between the two reads and were in the set would never be sent. A set behind it only
// sends a transaction again (at least once).
func positionNow(conn *client.Conn, flavor string) (cluster.Position, error) {
	var p cluster.Position
	var gtidMode string
	if flavor == cluster.FlavorMariaDB {
		// Read before the position, so it holds nothing after it.
		if g, err := conn.Execute("SELECT @@GLOBAL.gtid_binlog_pos"); err == nil {
			p.GTIDSet, _ = g.GetString(0, 0)
		}
	} else if g, err := conn.Execute("SELECT @@GLOBAL.gtid_mode"); err == nil {
		gtidMode, _ = g.GetString(0, 0)
	}
	r, err := conn.Execute("SHOW MASTER STATUS")
	if err != nil {
		return p, fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	if r.RowNumber() == 0 {
		return p, fmt.Errorf("%w (SHOW MASTER STATUS returned nothing)", ErrBinlogOff)
	}
	p.File, _ = r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	p.Pos = uint32(pos)
	if strings.EqualFold(gtidMode, "ON") && r.ColumnNumber() >= 5 {
		// MySQL's Executed_Gtid_Set, which the server reads before the position (unlike
		// @@GLOBAL.gtid_executed in a query of its own after it).
		p.GTIDSet, _ = r.GetString(0, 4)
		p.GTIDSet = strings.ReplaceAll(p.GTIDSet, "\n", "")
	}
	p.TS = time.Now().Unix()
	return p, nil
}

// Run captures until ctx ends (nil) or a fatal error.
func (c *Capture) Run(ctx context.Context) error {
	defer c.sc.close()
	defer c.snap.src.close()
	bo := backoff.New(c.BackoffMin, c.BackoffMax)
	session, now := c.session, time.Now
	if c.runSession != nil {
		session, now = c.runSession, c.now
	}
	var clashSince time.Time // when the server_id clashes in a row began
	for {
		began := now()
		read, err := session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if IsFatal(err) {
			return err
		}
		if read && now().Sub(began) >= c.stableSession() {
			bo.Reset()
			clashSince = time.Time{}
		}
		switch {
		case !IsServerIDClash(err):
			clashSince = time.Time{}
		case clashSince.IsZero():
			clashSince = began
		case now().Sub(clashSince) >= clashLimit:
			return c.clashStop(err, now().Sub(clashSince))
		}
		wait := bo.NextBackOff()
		c.Log.Warn("binlog connection failed; reconnecting", "resume", c.resume.String(), "backoff", wait, "err", err)
		if c.OnError != nil {
			c.OnError(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// clashLimit is how long a capture reconnects through server_id clashes before it stops:
// each reconnect ends the other replica's connection (a real replica's I/O thread then
// fails and retries), and a clash that lasts is a configuration to fix, not a moment
// (a wave's old connection after a move ends within seconds).
const clashLimit = 5 * time.Minute

// clashStop is the fatal error of a capture whose server_id clashed for as long as d.
func (c *Capture) clashStop(err error, d time.Duration) error {
	if !errors.Is(err, ErrServerIDClash) {
		err = fmt.Errorf("%w: %w", ErrServerIDClash, err)
	}
	return &fatalError{fmt.Errorf("%w; for %s: stopped, so as not to end the other replica's connection again and again: give the instance "+
		"a server_id of its own (binlake instance set %s -f FILE starts it again)", err, d.Round(time.Second), c.Inst.ID)}
}

// stableSession is how long a binlog session that read events must have stayed up for
// the reconnect backoff to start again from its first wait: twice the longest wait,
// reconnect_max_backoff (20 s by default). Any event read was not enough: a source that
// takes a session and drops it moments later (two replicas with one server_id, each
// connection ending the other's with ERROR 4052 once the first events were read) was
// reconnected to every 200 ms, for ever. Progress past the start position is no better
// sign: on a busy source such a session reads a few transactions each time. The longest
// wait alone is not enough either: in such a clash a session lasts until the other
// replica's next attempt, up to its longest wait and its jitter (12 s), and the two would
// take turns at resetting. Held to twice that, a flapping session backs off as a refused
// one does, while one that ran that long and then dropped (a source restart, a network
// cut) is retried in 200 ms.
func (c *Capture) stableSession() time.Duration {
	return 2 * max(c.BackoffMax, c.BackoffMin)
}

// session is one binlog connection. read reports whether it got any event.
func (c *Capture) session(ctx context.Context) (read bool, err error) {
	src := c.Inst.Source
	host, portStr, _ := net.SplitHostPort(src.Addr)
	port, _ := strconv.ParseUint(portStr, 10, 16)
	ep, err := c.endpoint()
	if err != nil {
		return false, err
	}
	var owner binlogOwner // set by onConnect
	dial := &singleDial{}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID:                src.ServerID,
		Flavor:                  src.Flavor,
		Host:                    host,
		Port:                    uint16(port),
		User:                    src.User,
		Password:                ep.Password,
		TLSConfig:               ep.TLS,
		Charset:                 "utf8mb4",
		TimestampStringLocation: time.UTC,
		ParseTime:               true,                // temporal values formatted by rowenc.EncodeRow, not fmt.Sprintf
		RowsEventDecodeFunc:     rowenc.DecodeHeader, // rows are read by the capture (c.rows)
		HeartbeatPeriod:         c.Heartbeat,
		ReadTimeout:             c.readTimeout(),
		DisableRetrySync:        true, // reconnects are ours: from a transaction boundary, with backoff
		EventCacheCount:         c.EventQueue,
		Logger:                  goMySQLLogger(c.Log, c.Password),
		DiscardGTIDSet:          true, // we track the set ourselves, at transaction boundaries
		Dialer:                  dial.dial,
		Option:                  func(conn *client.Conn) error { return c.onConnect(conn, &owner) },
	})
	defer func() {
		syncer.Close()
		if kerr := c.endSession(owner); err != nil && isAccessDenied(kerr) && !isAccessDenied(err) {
			// The connection dropped (killed, the server restarting) and the source now
			// refuses the login: the instance's reason says so through the backoff, where
			// it said "error" with the dropped connection's EOF (an outside trial changed
			// the password of a running instance's user).
			err = fmt.Errorf("%w; and the source now refuses the login: %w", err, kerr)
		}
	}()

	c.tables = map[uint64]*rowenc.Table{}
	c.unwanted = map[uint64]*replication.TableMapEvent{}
	c.reader = rowenc.NewReader()
	c.inTxn, c.inGroup, c.txEmitted, c.pending = false, false, false, nil
	c.savepoint, c.afterSavepoint = false, false
	c.dropOpenXA() // its group is read again; those prepared before c.resume stay held
	c.file = c.resume.File
	c.readPos = cluster.Position{}
	c.snap.table, c.snap.pending = nil, nil // read again: the binlog is read again from c.resume
	c.Lag.Saw()                             // a new connection: caught up again at its first heartbeat
	var streamer *replication.BinlogStreamer
	if c.gset != nil {
		streamer, err = syncer.StartSyncGTID(c.gset.Clone())
	} else {
		streamer, err = syncer.StartSync(mysql.Position{Name: c.resume.File, Pos: max(c.resume.Pos, 4)})
	}
	if err != nil {
		return false, classify(dumpDenied(ctx, ep, ServerError(err)))
	}
	if c.announce {
		c.announce = false
		if err := c.send(ctx, Item{Commit: ptr(c.offset())}); err != nil {
			return false, err // ctx ended
		}
	}
	progressed := false
	defer func() { c.sessionEnded(progressed, err) }()
	for {
		ev, err := c.nextEvent(ctx, streamer)
		if errors.Is(err, errNoEventYet) {
			if !c.inTxn && c.pending == nil {
				if err := c.snapStep(ctx); err != nil {
					return read, err
				}
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return read, nil
			}
			return read, classify(err)
		}
		read = true
		if c.OnRead != nil {
			c.OnRead(int(ev.Header.EventSize))
		}
		if connected(&progressed, ev) && c.OnConn != nil {
			c.OnConn()
		}
		c.seen = c.Lag.Saw()
		if err := c.handle(ctx, ev); err != nil {
			return read, err
		}
		if e, ok := ev.Event.(*replication.RotateEvent); ok {
			c.readPos = cluster.Position{File: c.file, Pos: uint32(e.Position)}
		} else if ev.Header.LogPos > 0 {
			c.readPos = cluster.Position{File: c.file, Pos: ev.Header.LogPos}
		}
		if !c.inTxn && c.pending == nil {
			if err := c.snapStep(ctx); err != nil {
				return read, err
			}
		}
	}
}

// endpoint reads the source's password again through Secret (when set) and the TLS
// files source.tls names, for the session's connections and those the schema reads and
// the snapshot open from now on: a rotated password or certificate is taken up at the
// next reconnect. The connections already open stay: they were accepted, and a KILL or
// a drop reopens them.
func (c *Capture) endpoint() (Endpoint, error) {
	if c.Secret != nil {
		pw, err := c.Secret()
		if err != nil {
			return Endpoint{}, err
		}
		c.Password = pw
	}
	ep, err := EndpointOf(c.Inst.Source, c.Password)
	if err != nil {
		return Endpoint{}, err
	}
	c.ep = ep
	c.sc.setEndpoint(ep)
	c.snap.src.ep = ep
	return ep, nil
}

// errNoEventYet: nextEvent waited its while without an event.
var errNoEventYet = errors.New("no binlog event yet")

// nextEvent is the next binlog event. While a snapshot waits for its next read or
// emission it waits only a moment, so that the snapshot goes on while the source is
// idle.
func (c *Capture) nextEvent(ctx context.Context, streamer *replication.BinlogStreamer) (*replication.BinlogEvent, error) {
	if !c.snapActive() && len(c.snap.requests) == 0 {
		return streamer.GetEvent(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	ev, err := streamer.GetEvent(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, errNoEventYet
	}
	return ev, err
}

// dumpDenied says why the source refused the binlog dump with an access error (err):
// MariaDB answers a user without REPLICATION SLAVE with the ERROR 1045 of a wrong
// password, and the operator checked the password. A plain login is tried: when it
// works, the privilege is what is missing. err itself otherwise.
func dumpDenied(ctx context.Context, ep Endpoint, err error) error {
	if !isAccessDenied(err) {
		return err
	}
	conn, cerr := ep.connect(ctx, 10*time.Second)
	if cerr != nil {
		return err // the login itself is refused: the password, or the user's host
	}
	conn.Close()
	return fmt.Errorf("user %s logs in, but the source refused to send it the binlog (%w): grant it REPLICATION SLAVE", ep.User, err)
}

// classify marks the source's "cannot serve this position" error as fatal, and names a
// server_id clash, which MySQL reports with the same code 1236.
func classify(err error) error {
	var me *mysql.MyError
	if IsServerIDClash(err) && !errors.Is(err, ErrServerIDClash) {
		return fmt.Errorf("%w: %w", ErrServerIDClash, err)
	}
	msg, is1236 := err.Error(), strings.Contains(err.Error(), "ERROR 1236")
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		msg, is1236 = me.Message, true
	}
	switch {
	case !is1236:
		return err
	case isPurged(msg):
		return &fatalError{fmt.Errorf("%w: %s", ErrBinlogPurged, msg)}
	}
	return &fatalError{fmt.Errorf("%w: %s (the instance's start or last position is not one the source can send from: not an event's start, or a GTID it never wrote; remove and add the instance with a start the source has, or snapshot it to start at the source's end)", ErrPositionUnserved, msg)}
}

func (c *Capture) send(ctx context.Context, it Item) error {
	select {
	case c.Out <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Capture) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	c.evSeq++
	switch e := ev.Event.(type) {
	case *replication.FormatDescriptionEvent:
		c.checksum = e.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
	case *replication.RotateEvent:
		c.file = string(e.NextLogName)
		if !c.inTxn && c.gset == nil {
			c.resume.File, c.resume.Pos = c.file, uint32(e.Position)
		}
	case *replication.MariadbGTIDEvent:
		c.beginTxn(e.GTID.String())
		c.inGroup = !e.IsStandalone()
		if e.Flags&mariadbFlPreparedXA != 0 {
			c.xaBegin()
		}
		gtid := e.GTID
		gs := c.nextGSet()
		if gs != nil {
			if err := gs.(*mysql.MariadbGTIDSet).AddSet(&gtid); err != nil {
				return fmt.Errorf("gtid %s: %w", gtid.String(), err)
			}
		} else {
			ngs, _ := mysql.ParseMariadbGTIDSet(gtid.String())
			c.txGSet = ngs
		}
	case *replication.GTIDEvent:
		u, err := uuidString(e.SID)
		if err != nil {
			return err
		}
		c.beginTxn(fmt.Sprintf("%s:%d", u, e.GNO))
		if gs := c.nextGSet(); gs != nil {
			if mgs, ok := gs.(*mysql.MysqlGTIDSet); ok {
				if err := mgs.Update(c.txGTID); err != nil {
					return fmt.Errorf("gtid %s: %w", c.txGTID, err)
				}
			}
		}
	case *replication.QueryEvent:
		return c.query(ctx, h, string(e.Schema), string(e.Query))
	case *replication.ExecuteLoadQueryEvent:
		return c.loadData(ev)
	case *replication.GenericEvent:
		if h.EventType == replication.XA_PREPARE_LOG_EVENT {
			return c.xaPrepare(ctx, h, e.Data)
		}
	case *replication.TableMapEvent:
		return c.tableMap(ctx, e)
	case *replication.RowsEvent:
		return c.rows(ctx, h, ev.Header.EventType, e)
	case *replication.XIDEvent:
		return c.endTxn(ctx, h, e.XID)
	case *replication.TransactionPayloadEvent:
		// MySQL 8's binlog_transaction_compression: a transaction's events (BEGIN, table
		// maps, rows, XID) compressed into one, which go-mysql decodes with positions of
		// their own (the payload's start, and its end for the last). Unhandled, every
		// compressed transaction's rows were dropped without a word.
		for _, inner := range e.Events {
			if err := c.handle(ctx, inner); err != nil {
				return err
			}
		}
	case *replication.HeartbeatEvent:
		// The source has nothing newer: once everything before is acknowledged, the
		// capture is caught up (Lag). go-mysql parses both heartbeat versions into this
		// type; one mid-transaction says nothing (the rest is still to come).
		if !c.inTxn {
			return c.send(ctx, Item{Heartbeat: c.seen, TS: time.Now().Unix()})
		}
	}
	return nil
}

// query handles a query event by what its statement is (classifyStatement).
func (c *Capture) query(ctx context.Context, h *replication.EventHeader, schema, sql string) error {
	st := classifyStatement(sql)
	switch st.kind {
	case stmtNone:
		return nil
	case stmtSavepoint:
		c.savepointRead(st)
		return nil
	case stmtRollbackTo:
		return c.rollbackTo(h, st)
	case stmtBegin:
		c.inTxn, c.inGroup = true, true
		return nil
	case stmtCommit:
		return c.endTxn(ctx, h, 0)
	case stmtRollback:
		return c.rollbackGroup(ctx, h, st)
	case stmtXA:
		return c.xaQuery(ctx, h, st)
	case stmtDML:
		return c.statementDML(h, schema, st)
	}
	return c.ddl(ctx, h, schema, strings.TrimSpace(sql))
}

// nextGSet is the GTID set as it will be after the current transaction commits.
func (c *Capture) nextGSet() mysql.GTIDSet {
	if c.txGSet == nil && c.gset != nil {
		c.txGSet = c.gset.Clone()
	}
	return c.txGSet
}

func (c *Capture) beginTxn(gtid string) {
	if c.xa != nil {
		c.Log.Warn("an XA transaction's prepared part ended without XA PREPARE: its rows are dropped", "gtid", c.xa.gtid, "after", c.xa.hold.String())
		c.dropOpenXA()
	}
	c.inTxn, c.inGroup, c.txEmitted = true, false, false
	c.savepoint, c.afterSavepoint = false, false
	c.txGTID = gtid
	c.txGSet = nil
}

func (c *Capture) tableMap(ctx context.Context, tm *replication.TableMapEvent) error {
	if t, ok := c.tables[tm.TableID]; ok && t.SameLayout(tm) {
		t.SetMap(tm)
		return nil
	}
	if !c.wanted(string(tm.Schema), string(tm.Table)) {
		delete(c.tables, tm.TableID)
		if c.unwanted == nil {
			c.unwanted = map[uint64]*replication.TableMapEvent{}
		}
		c.unwanted[tm.TableID] = tm
		return nil
	}
	delete(c.unwanted, tm.TableID)
	return c.readLayout(ctx, tm)
}

// wanted reports whether a table's rows are read: a subscription takes it, or a snapshot
// reads it.
func (c *Capture) wanted(db, table string) bool {
	return len(c.Filter.Tables(db, table)) > 0 || c.snapActive() && c.snapTable() == db+"."+table
}

// readLayout reads a table's layout from its table map and the schema, for its rows.
func (c *Capture) readLayout(ctx context.Context, tm *replication.TableMapEvent) error {
	t, err := buildTable(ctx, tm, c.Inst.Source.Flavor, c.sc)
	if err != nil {
		return err
	}
	t.Prepare()
	t.SetMap(tm)
	c.tables[tm.TableID] = t
	return nil
}

func (c *Capture) rows(ctx context.Context, h *replication.EventHeader, et replication.EventType, e *replication.RowsEvent) error {
	t, ok := c.tables[e.TableID]
	unwanted := c.unwanted[e.TableID]
	if !ok && unwanted == nil {
		return fmt.Errorf("rows event for unknown table id %d at %s:%d", e.TableID, c.file, h.LogPos)
	}
	var typ string
	switch et {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		typ = rowenc.TypeInsert
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.PARTIAL_UPDATE_ROWS_EVENT, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		typ = rowenc.TypeUpdate
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		typ = rowenc.TypeDelete
	default:
		return nil
	}
	c.inTxn = true
	if !ok {
		if !c.wanted(string(unwanted.Schema), string(unwanted.Table)) {
			return nil
		}
		// Wanted since its table map came (a snapshot of it began): its layout now.
		if err := c.readLayout(ctx, unwanted); err != nil {
			return err
		}
		delete(c.unwanted, e.TableID)
		t = c.tables[e.TableID]
	}
	subs := c.Filter.Match(t.Database, t.Name, typ)
	// The table a snapshot reads: every change counts, subscribed or not.
	snapshotting := c.snapActive() && c.snapTable() == t.Database+"."+t.Name
	if len(subs) == 0 && !snapshotting {
		return nil
	}
	b := &rowsBatch{subs: subs, Event: rowenc.Event{
		Table: t, Type: typ,
		Meta: rowenc.Meta{Instance: c.Inst.ID, TS: int64(h.Timestamp), GTID: c.txGTID, File: c.file, Pos: h.LogPos, EventPos: h.LogPos - min(h.EventSize, h.LogPos)},
	}}
	var err error
	if len(subs) == 0 {
		// The snapshot's alone (a change no subscription takes, of the table it reads):
		// read with a reader of its own, so that the row held back stays held for the
		// transaction's commit flag (flushed here, it went out without it: an outside trial).
		if c.snapReader == nil {
			c.snapReader = rowenc.NewReader()
		}
		if b.Rows, err = c.snapReader.Read(et, e, t, typ); err != nil {
			return fmt.Errorf("rows event of %s.%s at %s:%d: %w", t.Database, t.Name, c.file, h.LogPos, err)
		}
		c.snapTouch(b)
		return nil
	}
	// The held-back event goes out first: the reader's next rows take its buffers.
	if err := c.flush(ctx, false, 0); err != nil {
		return err
	}
	if b.Rows, err = c.reader.Read(et, e, t, typ); err != nil {
		return fmt.Errorf("rows event of %s.%s at %s:%d: %w", t.Database, t.Name, c.file, h.LogPos, err)
	}
	if snapshotting {
		c.snapTouch(b)
	}
	if !rowenc.WholeRows(e) {
		return c.partialRows(h, t, typ, e)
	}
	c.pending = b
	c.afterSavepoint = c.afterSavepoint || c.savepoint
	return nil
}

// flush encodes and sends the held-back rows event; commit marks its last row as the
// transaction's last.
func (c *Capture) flush(ctx context.Context, commit bool, xid uint64) error {
	b := c.pending
	if b == nil {
		return nil
	}
	c.pending = nil
	it, err := c.encode(ctx, b, commit, xid)
	if err != nil || len(it.Msgs) == 0 {
		return err
	}
	return c.emit(ctx, it)
}

// encode encodes a rows event's images into its messages, one per row and
// subscription, or per partition and subscription for a grouping format (grouping.go).
func (c *Capture) encode(ctx context.Context, b *rowsBatch, commit bool, xid uint64) (Item, error) {
	c.targets = c.targets[:0]
	for _, si := range b.subs {
		sub := c.Filter.Subscription(si)
		c.targets = append(c.targets, rowenc.Target{By: sub.PartitionBy, Format: c.Filter.Format(si),
			Partition: c.partitionOf(sub.Topic), GroupBytes: c.groupBytes()})
	}
	it := Item{TS: b.Meta.TS}
	c.encodeCtx = ctx
	msgs, err := c.enc.Encode(&b.Event, c.targets, commit, xid, c.keep)
	c.encodeCtx = nil
	if err != nil {
		return it, &fatalError{err}
	}
	it.Msgs = make([]bus.Message, 0, len(msgs))
	for _, m := range msgs {
		it.Msgs = append(it.Msgs, bus.Message{Topic: c.Filter.Subscription(b.subs[m.By]).Topic, Key: m.Key, Value: m.Value})
		it.Bytes += len(m.Key) + len(m.Value)
		it.ExtraRows += m.Rows - 1
	}
	return it, nil
}

// keep is the encoder's check of each message: its size (checkSize).
func (c *Capture) keep(ev *rowenc.Event, key, value []byte, m rowenc.Meta) (bool, error) {
	err := c.checkSize(key, value, ev.Table, m)
	if errors.Is(err, errSkip) {
		return false, nil
	}
	return err == nil, err
}

var errSkip = errors.New("skip")

func (c *Capture) checkSize(key, value []byte, t *rowenc.Table, m rowenc.Meta) error {
	if c.MaxBytes <= 0 || len(key)+len(value) <= c.MaxBytes {
		return nil
	}
	if c.Inst.OnTooLarge == cluster.TooLargeSkip {
		c.Log.Warn("row message larger than the sink accepts: skipped (on_too_large: skip)",
			"table", t.Database+"."+t.Name, "bytes", len(key)+len(value), "limit", c.MaxBytes, "file", m.File, "pos", m.Pos)
		if c.OnSkip != nil {
			c.OnSkip()
		}
		return errSkip
	}
	from := c.MaxBytesFrom
	if from == "" {
		from = "the sink's max_message_bytes"
	}
	return &fatalError{fmt.Errorf("%w: %s.%s at %s:%d is %d bytes, the limit %d (%s); raise the limit and restart the wave, "+
		"or drop such rows with `binlake instance set %s -on-too-large skip` (in place: it resumes from its committed offset; "+
		"a removal would drop the offset, and an add start at the source's end, losing every row in between)",
		ErrMessageTooLarge, t.Database, t.Name, m.File, m.Pos, len(key)+len(value), c.MaxBytes, from, c.Inst.ID)}
}

// endTxn closes a transaction: the held rows event gets the commit flag, and the boundary
// after it becomes the resume position.
func (c *Capture) endTxn(ctx context.Context, h *replication.EventHeader, xid uint64) error {
	if err := c.flush(ctx, true, xid); err != nil {
		return err
	}
	c.boundary(h)
	return c.send(ctx, Item{Commit: ptr(c.offset()), TS: int64(h.Timestamp)})
}

func (c *Capture) boundary(h *replication.EventHeader) {
	c.inTxn, c.inGroup, c.txEmitted = false, false, false
	c.savepoint, c.afterSavepoint = false, false
	if c.txGSet != nil {
		c.gset = c.txGSet
		c.txGSet = nil
	}
	c.resume.File, c.resume.Pos = c.file, h.LogPos
	if c.gset != nil {
		c.resume.GTIDSet = c.gset.String()
	}
	if h.Timestamp != 0 {
		c.resume.TS = int64(h.Timestamp)
	}
}

func ptr[T any](v T) *T { return &v }

func uuidString(sid []byte) (string, error) {
	if len(sid) != 16 {
		return "", fmt.Errorf("gtid event: source id of %d bytes", len(sid))
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i, x := range sid {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b.WriteByte('-')
		}
		b.WriteByte(hex[x>>4])
		b.WriteByte(hex[x&0xF])
	}
	return b.String(), nil
}
