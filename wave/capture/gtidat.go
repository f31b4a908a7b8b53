package capture

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

// The GTID set at a binlog file/pos, for an instance started by file/pos: with it the
// instance resumes by GTID, which (unlike a file name) means the same on every server of
// the replication topology, so a switch of the source to another server keeps its place.

// binlogEventsPage is how many rows one SHOW BINLOG EVENTS returns while a MySQL binlog
// file is read for its GTIDs: a page is held in memory, and the scan goes on from its end.
var binlogEventsPage = 2000

// gtidAt returns the GTID set at file/pos on the server conn reads, or nil and the reason
// when there is none to take (the instance then keeps resuming by file/pos).
func gtidAt(conn *client.Conn, flavor, file string, pos uint32) (mysql.GTIDSet, string, error) {
	if flavor == cluster.FlavorMariaDB {
		return mariadbGTIDAt(conn, file, pos)
	}
	return mysqlGTIDAt(conn, file, pos)
}

// mariadbGTIDAt asks MariaDB, which computes the position itself (BINLOG_GTID_POS).
func mariadbGTIDAt(conn *client.Conn, file string, pos uint32) (mysql.GTIDSet, string, error) {
	r, err := conn.Execute("SELECT BINLOG_GTID_POS(?, ?)", file, uint64(pos))
	if err != nil {
		return nil, "", fmt.Errorf("BINLOG_GTID_POS(%q, %d): %w", file, pos, err)
	}
	if null, _ := r.IsNull(0, 0); null {
		return nil, fmt.Sprintf("%s:%d is not in the source's binlog", file, pos), nil
	}
	s, _ := r.GetString(0, 0)
	if s == "" {
		// An empty GTID position would make the source send from its oldest binlog.
		return nil, fmt.Sprintf("no GTID precedes %s:%d on the source", file, pos), nil
	}
	gs, err := mysql.ParseMariadbGTIDSet(s)
	if err != nil {
		return nil, "", fmt.Errorf("BINLOG_GTID_POS(%q, %d) = %q: %w", file, pos, s, err)
	}
	return gs, "", nil
}

// mysqlGTIDAt reads the set from the binlog file itself, since MySQL has no function for
// it: the set the file starts with (its Previous_gtids event) plus the GTID of every
// transaction that begins before pos. It takes nothing when gtid_mode is not ON: with
// anonymous transactions in the binlog a GTID set does not say where the instance is.
func mysqlGTIDAt(conn *client.Conn, file string, pos uint32) (mysql.GTIDSet, string, error) {
	r, err := conn.Execute("SELECT @@GLOBAL.gtid_mode")
	if err != nil {
		var me *mysql.MyError
		if errors.As(err, &me) { // the server has no gtid_mode (before 5.6)
			return nil, fmt.Sprintf("the source has no GTIDs (%v)", err), nil
		}
		return nil, "", fmt.Errorf("read the source's gtid_mode: %w", err)
	}
	if mode, _ := r.GetString(0, 0); !strings.EqualFold(mode, "ON") {
		return nil, fmt.Sprintf("gtid_mode is %q on the source, not ON", mode), nil
	}
	pos = max(pos, 4) // as the binlog dump reads it: 0 means the file's start
	set := mysql.NewMysqlGTIDSet()
	gs := &set
	from, last := uint64(4), uint64(4) // where the next page starts; where the file's events end
	atBoundary := false
	for {
		q := fmt.Sprintf("SHOW BINLOG EVENTS IN '%s' FROM %d LIMIT %d", mysql.Escape(file), from, binlogEventsPage)
		r, err := conn.Execute(q)
		if err != nil {
			var me *mysql.MyError
			if errors.As(err, &me) && me.Code == mysql.ER_ERROR_WHEN_EXECUTING_COMMAND {
				// "Could not find target log": as MariaDB's NULL for a file it does not have.
				return nil, fmt.Sprintf("%s:%d is not in the source's binlog (%s)", file, pos, me.Message), nil
			}
			return nil, "", fmt.Errorf("%s: %w", q, err)
		}
		done, err := addBinlogEvents(gs, r, pos, &last, &atBoundary)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", q, err)
		}
		if done || r.RowNumber() < binlogEventsPage {
			break
		}
		if last <= from {
			return nil, "", fmt.Errorf("%s: the events end at %d, not after where the page started", q, last)
		}
		from = last
	}
	switch {
	case last < uint64(pos):
		return nil, fmt.Sprintf("%s:%d is past the end of the file (%d) on the source", file, pos, last), nil
	case !atBoundary:
		return nil, fmt.Sprintf("%s:%d is not where an event of the file starts", file, pos), nil
	case gs.IsEmpty():
		// An empty set would make the source send from its oldest binlog.
		return nil, fmt.Sprintf("no GTID precedes %s:%d on the source", file, pos), nil
	}
	return gs, "", nil
}

// addBinlogEvents adds the GTIDs of one page of SHOW BINLOG EVENTS (Log_name, Pos,
// Event_type, Server_id, End_log_pos, Info) to gs, up to the first event at or after pos
// (done). last is moved to the end of each event read; atBoundary is set when an event
// starts or ends at pos.
func addBinlogEvents(gs *mysql.MysqlGTIDSet, r *mysql.Result, pos uint32, last *uint64, atBoundary *bool) (done bool, err error) {
	for i := range r.RowNumber() {
		start, err1 := r.GetUint(i, 1)
		typ, err2 := r.GetString(i, 2)
		end, err3 := r.GetUint(i, 4)
		info, err4 := r.GetString(i, 5)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		if start == uint64(pos) || end == uint64(pos) {
			*atBoundary = true
		}
		switch {
		case typ == "Format_desc":
			// The file's header: before any transaction, whatever pos is.
		case typ == "Previous_gtids":
			// The set the file starts with (the file's header too).
			info = strings.ReplaceAll(info, "\n", "")
			if err := gs.Update(info); err != nil {
				return false, fmt.Errorf("Previous_gtids %q at %d: %w", info, start, err)
			}
		case start >= uint64(pos):
			return true, nil
		case strings.HasPrefix(typ, "Gtid"): // Gtid, and Gtid_tagged_log of MySQL 8.4
			gtid, err := parseGTIDNext(info)
			if err != nil {
				return false, fmt.Errorf("%s event at %d: %w", typ, start, err)
			}
			if err := gs.Update(gtid); err != nil {
				return false, fmt.Errorf("%s event at %d: GTID %q: %w", typ, start, gtid, err)
			}
		}
		*last = max(*last, end)
	}
	return false, nil
}

// parseGTIDNext takes the GTID out of a Gtid event's Info in SHOW BINLOG EVENTS,
// "SET @@SESSION.GTID_NEXT= '<uuid>[:<tag>]:<number>'".
func parseGTIDNext(info string) (string, error) {
	const prefix = "SET @@SESSION.GTID_NEXT="
	rest, ok := strings.CutPrefix(strings.TrimSpace(info), prefix)
	if !ok {
		return "", fmt.Errorf("info %q: want %s '<gtid>'", info, prefix)
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 2 || rest[0] != '\'' || rest[len(rest)-1] != '\'' {
		return "", fmt.Errorf("info %q: the GTID is not quoted", info)
	}
	gtid := rest[1 : len(rest)-1]
	if _, err := mysql.ParseMysqlGTIDSet(gtid); err != nil || gtid == "" {
		return "", fmt.Errorf("info %q: %q is not a GTID", info, gtid)
	}
	return gtid, nil
}
