package capture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

// The source's address may move to another server (a proxy or virtual IP after a switch
// from the primary to a replica). This file holds what keeps a capture right across such a
// move: a reconnect never KILLs a connection id on a server that did not own it, and an
// instance started by file/pos takes the GTID position of that file/pos on its first
// connection, so that it resumes by GTID on the new server (a file name means nothing
// there).

// killTimeout bounds the connection that ends a stale binlog connection: a reconnect (or a
// shutdown) waits for it.
const killTimeout = 3 * time.Second

// binlogOwner identifies one session's binlog connection: its id and the server that
// holds it. A KILL of that id is sent only where the same server answers.
type binlogOwner struct {
	connID   uint32
	serverID uint64
	// serverUUID is MySQL's per-datadir identity; MariaDB has none (its server_id is
	// unique within a replication topology, which a switch stays in).
	serverUUID string
}

func (o binlogOwner) String() string {
	if o.serverUUID != "" {
		return fmt.Sprintf("server_id %d uuid %s", o.serverID, o.serverUUID)
	}
	return fmt.Sprintf("server_id %d", o.serverID)
}

// identify reads who is at the other end of conn.
func identify(conn *client.Conn, flavor string) (binlogOwner, error) {
	q := "SELECT @@server_id"
	if flavor != cluster.FlavorMariaDB {
		q = "SELECT @@server_id, @@server_uuid"
	}
	r, err := conn.Execute(q)
	if err != nil {
		if f := FlavorOf(conn.GetServerVersion()); f != flavor {
			// MariaDB has no @@server_uuid: "Unknown system variable" named no cause.
			return binlogOwner{}, fmt.Errorf("read the source's server id: %w (the instance's flavor is %s, and the source answers as %s, %s: "+
				"set source.flavor: %s, binlake instance set <id> -f FILE)", err, flavor, f, conn.GetServerVersion(), f)
		}
		return binlogOwner{}, fmt.Errorf("read the source's server id: %w", err)
	}
	o := binlogOwner{connID: conn.GetConnectionID()}
	if o.serverID, err = r.GetUint(0, 0); err != nil {
		return binlogOwner{}, fmt.Errorf("read the source's server id: %w", err)
	}
	if flavor != cluster.FlavorMariaDB {
		o.serverUUID, _ = r.GetString(0, 1)
	}
	return o, nil
}

var errSecondDial = errors.New("binlog syncer: one connection per session (the capture ends a stale one itself, on its own server)")

// singleDial gives a binlog syncer its one connection and refuses any other. go-mysql's
// Close opens a second connection to the same address to KILL the first by id; after the
// address moved to another server that KILL lands there, on whatever session has that id.
// With the second dial refused, Close sends nothing, and killStale does the job where it
// is safe.
type singleDial struct{ used atomic.Bool }

func (d *singleDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.used.Swap(true) {
		return nil, errSecondDial
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// killStale ends the binlog dump thread of a finished session if the server still runs it
// (a reconnect through a middlebox can leave it waiting until its next heartbeat write
// fails). It sends KILL only when addr answers the server that owned the connection and
// the thread with that id is a binlog dump of user; otherwise the old server drops the
// thread by itself. killed reports whether a KILL was sent; reason says why not.
func killStale(ctx context.Context, ep Endpoint, flavor string, owner binlogOwner) (killed bool, reason string, err error) {
	conn, err := ep.connect(ctx, killTimeout)
	if err != nil {
		return false, "", fmt.Errorf("connect to %s: %w", ep.Addr, err)
	}
	defer conn.Close()
	now, err := identify(conn, flavor)
	if err != nil {
		return false, "", err
	}
	if now.serverID != owner.serverID || now.serverUUID != owner.serverUUID {
		return false, fmt.Sprintf("%s now answers as %s, the connection was on %s", ep.Addr, now, owner), nil
	}
	r, err := conn.Execute(fmt.Sprintf("SELECT COMMAND, USER FROM information_schema.PROCESSLIST WHERE ID = %d", owner.connID))
	if err != nil {
		return false, "", fmt.Errorf("look up connection %d: %w", owner.connID, err)
	}
	if r.RowNumber() == 0 {
		return false, "the connection is gone", nil
	}
	cmd, _ := r.GetString(0, 0)
	who, _ := r.GetString(0, 1)
	if dump := strings.EqualFold(cmd, "Binlog Dump") || strings.EqualFold(cmd, "Binlog Dump GTID"); !dump || who != ep.User {
		return false, fmt.Sprintf("connection id %d now belongs to another session (%s by %s)", owner.connID, cmd, who), nil
	}
	if _, err := conn.Execute(fmt.Sprintf("KILL %d", owner.connID)); err != nil {
		var me *mysql.MyError
		if errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_THREAD {
			return false, "the connection ended meanwhile", nil
		}
		return false, "", fmt.Errorf("KILL %d: %w", owner.connID, err)
	}
	return true, "", nil
}

// endSession ends what is left of a finished session's binlog connection on the source
// (killStale), logging the outcome: a failure only delays the source's own cleanup. It
// returns the failure, which says what the next session will meet (an access error: the
// password changed under a running instance).
func (c *Capture) endSession(owner binlogOwner) error {
	if owner.connID == 0 {
		return nil // the session never got a connection
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	killed, reason, err := killStale(ctx, c.ep, c.Inst.Source.Flavor, owner)
	switch {
	case err != nil:
		c.Log.Info("stale binlog connection left to the source", "conn_id", owner.connID, "err", err)
	case killed:
		c.Log.Info("stale binlog connection killed", "conn_id", owner.connID, "server", owner.String())
	default:
		c.Log.Info("stale binlog connection not killed", "conn_id", owner.connID, "reason", reason)
	}
	return err
}

// isAccessDenied reports whether err holds the source's refusal of a login or privilege.
func isAccessDenied(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && (me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR)
}

// onConnect runs on each session's binlog connection before it registers as a replica. It
// records who owns the connection, and on an instance started by file/pos without a GTID
// set, takes the GTID position of that file/pos from the server that wrote the file (the
// one this connection reads), once. It warns of the server's settings that would stop the
// instance (warnSourceSettings).
func (c *Capture) onConnect(conn *client.Conn, owner *binlogOwner) error {
	o, err := identify(conn, c.Inst.Source.Flavor)
	if err != nil {
		return err
	}
	*owner = o
	c.warnSourceSettings(conn, o)
	if c.gset != nil || c.gtidLookedUp {
		return nil
	}
	gs, why, err := gtidAt(conn, c.Inst.Source.Flavor, c.resume.File, c.resume.Pos)
	if err != nil {
		return err
	}
	c.gtidLookedUp = true
	if gs == nil {
		c.Log.Warn("start by file/pos kept: the instance resumes by file name, which does not survive a switch of the source to another server; start it by gtid_set",
			"position", c.resume.String(), "reason", why)
		return nil
	}
	c.gset = gs
	c.resume.GTIDSet = gs.String()
	c.announce = true
	c.Log.Info("start by file/pos: resuming by GTID from here", "position", c.resume.String())
	return nil
}

// warnSourceSettings logs, once for each server the capture reads (a switch may bring one
// set up otherwise), what in its binlog settings stops the instance at the first event
// they touch (SourceSettings.BinlogProblems): the log says it at the start, not hours later.
func (c *Capture) warnSourceSettings(conn *client.Conn, o binlogOwner) {
	server := o.String()
	if c.settingsOf == server {
		return
	}
	c.settingsOf = server
	s, err := ReadSourceSettings(conn)
	if err != nil {
		c.Log.Info("source settings not checked", "server", server, "err", err)
		return
	}
	for _, p := range s.BinlogProblems() {
		c.Log.Warn("source setting: "+p, "server", server)
	}
}

// ErrBinlogOff reports a source that writes no binlog: there is nothing to capture until
// an operator turns log_bin on.
var ErrBinlogOff = errors.New("the source writes no binlog: turn log_bin on")
