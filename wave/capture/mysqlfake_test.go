package capture

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// No MySQL server runs on the test machine (Debian ships MariaDB only), so what the
// capture asks a MySQL source is answered here by go-mysql's server package: a real MySQL
// protocol connection to a server that knows a few queries and one binlog.

// fakeBinlogEvent is one row of SHOW BINLOG EVENTS.
type fakeBinlogEvent struct {
	pos  uint64
	typ  string
	end  uint64
	info string
}

// fakeMySQL is a MySQL server with the given global variables and binlog files. It
// records the queries it was sent.
type fakeMySQL struct {
	serverID   uint64
	serverUUID string
	gtidMode   string // "" = the variable does not exist
	files      map[string][]fakeBinlogEvent
	// mariadb answers as MariaDB where the two differ (SHOW MASTER STATUS, the GTID
	// variables); end is where the binlog ends and the GTID set there, and next, when
	// set, a transaction that commits right after a SHOW MASTER STATUS has answered.
	mariadb bool
	end     fakeEnd
	next    *fakeEnd
	// vars answer SHOW GLOBAL VARIABLES (every one, whatever its WHERE); replicas answer
	// replicasQuery (SHOW SLAVE HOSTS when empty; MySQL 8.4 knows only SHOW REPLICAS),
	// under replicaColumns.
	vars           map[string]string
	replicasQuery  string
	replicaColumns []string
	replicas       [][]any

	mu      sync.Mutex
	queries []string
}

// fakeEnd is where a fake server's binlog ends.
type fakeEnd struct {
	file  string
	pos   uint64
	gtids string
}

var (
	showBinlogEvents = regexp.MustCompile(`^SHOW BINLOG EVENTS IN '((?:[^'\\]|\\.)*)' FROM (\d+) LIMIT (\d+)$`)
	sqlEscape        = regexp.MustCompile(`\\(.)`)
)

// HandleQuery answers what the wave asks a MySQL source on connecting (identify,
// gtidAt). SHOW BINLOG EVENTS behaves as MySQL's: an unknown file or a FROM that is not
// where an event starts is error 1220.
func (f *fakeMySQL) HandleQuery(q string) (*mysql.Result, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	switch q {
	case "SELECT @@server_id, @@server_uuid":
		return fakeResult([]string{"@@server_id", "@@server_uuid"}, []any{f.serverID, f.serverUUID})
	case "SELECT @@GLOBAL.gtid_mode":
		if f.gtidMode == "" {
			return nil, mysql.NewError(mysql.ER_UNKNOWN_SYSTEM_VARIABLE, "Unknown system variable 'gtid_mode'")
		}
		return fakeResult([]string{"@@GLOBAL.gtid_mode"}, []any{f.gtidMode})
	case "SELECT @@GLOBAL.gtid_mode, @@GLOBAL.gtid_executed":
		return fakeResult([]string{"@@GLOBAL.gtid_mode", "@@GLOBAL.gtid_executed"}, []any{f.gtidMode, f.end.gtids})
	case "SELECT @@GLOBAL.gtid_executed":
		return fakeResult([]string{"@@GLOBAL.gtid_executed"}, []any{f.end.gtids})
	case "SELECT @@GLOBAL.gtid_binlog_pos":
		return fakeResult([]string{"@@GLOBAL.gtid_binlog_pos"}, []any{f.end.gtids})
	case "SHOW MASTER STATUS":
		e := f.end
		if f.next != nil {
			f.end, f.next = *f.next, nil
		}
		if f.mariadb {
			return fakeResult([]string{"File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"}, []any{e.file, e.pos, "", ""})
		}
		return fakeResult([]string{"File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"}, []any{e.file, e.pos, "", "", e.gtids})
	}
	if r, ok := f.answerSettings(q); ok {
		return r, nil
	}
	m := showBinlogEvents.FindStringSubmatch(q)
	if m == nil {
		return nil, mysql.NewError(mysql.ER_UNKNOWN_ERROR, "fake MySQL: unexpected query "+q)
	}
	events, ok := f.files[sqlEscape.ReplaceAllString(m[1], "$1")]
	if !ok {
		return nil, mysql.NewError(mysql.ER_ERROR_WHEN_EXECUTING_COMMAND, "Error when executing command SHOW BINLOG EVENTS: Could not find target log")
	}
	from, _ := strconv.ParseUint(m[2], 10, 64)
	limit, _ := strconv.Atoi(m[3])
	i := 0
	for i < len(events) && events[i].pos < from {
		i++
	}
	if from > 4 && (i == len(events) || events[i].pos != from) && (len(events) == 0 || events[len(events)-1].end != from) {
		return nil, mysql.NewError(mysql.ER_ERROR_WHEN_EXECUTING_COMMAND, "Error when executing command SHOW BINLOG EVENTS: Wrong offset or I/O error")
	}
	var rows [][]any
	for ; i < len(events) && len(rows) < limit; i++ {
		e := events[i]
		rows = append(rows, []any{m[1], e.pos, e.typ, f.serverID, e.end, e.info})
	}
	rs, err := mysql.BuildSimpleTextResultset([]string{"Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info"}, rows)
	if err != nil {
		return nil, err
	}
	return mysql.NewResult(rs), nil
}

// answerSettings answers SHOW GLOBAL VARIABLES and the replicas' listing.
func (f *fakeMySQL) answerSettings(q string) (*mysql.Result, bool) {
	var names []string
	var rows [][]any
	switch {
	case strings.HasPrefix(q, "SHOW GLOBAL VARIABLES"):
		names = []string{"Variable_name", "Value"}
		for _, k := range slices.Sorted(maps.Keys(f.vars)) {
			rows = append(rows, []any{k, f.vars[k]})
		}
	case q == cmp.Or(f.replicasQuery, "SHOW SLAVE HOSTS"):
		names, rows = f.replicaColumns, f.replicas
		if names == nil {
			names = []string{"Server_id", "Host", "Port", "Master_id"}
		}
	default:
		return nil, false
	}
	rs, err := mysql.BuildSimpleTextResultset(names, rows)
	if err != nil {
		panic(err)
	}
	return mysql.NewResult(rs), true
}

func fakeResult(names []string, row []any) (*mysql.Result, error) {
	rs, err := mysql.BuildSimpleTextResultset(names, [][]any{row})
	if err != nil {
		return nil, err
	}
	return mysql.NewResult(rs), nil
}

func (f *fakeMySQL) UseDB(string) error { return nil }
func (f *fakeMySQL) HandleFieldList(string, string) ([]*mysql.Field, error) {
	return nil, errors.New("fake MySQL: no field list")
}
func (f *fakeMySQL) HandleStmtPrepare(string) (int, int, any, error) {
	return 0, 0, nil, errors.New("fake MySQL: no prepared statements")
}
func (f *fakeMySQL) HandleStmtExecute(any, string, []any) (*mysql.Result, error) {
	return nil, errors.New("fake MySQL: no prepared statements")
}
func (f *fakeMySQL) HandleStmtClose(any) error { return nil }
func (f *fakeMySQL) HandleOtherCommand(cmd byte, _ []byte) error {
	return mysql.NewError(mysql.ER_UNKNOWN_ERROR, fmt.Sprintf("fake MySQL: command %d not supported", cmd))
}

// sent returns the queries received so far.
func (f *fakeMySQL) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

// fakeServerConf is made once: it generates an RSA key.
var fakeServerConf = sync.OnceValue(server.NewDefaultServer)

// connect serves f on a local port and returns a client connection to it; both end with
// the test.
func (f *fakeMySQL) connect(t *testing.T) *client.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	srv := fakeServerConf()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				sc, err := srv.NewConn(nc, "root", "", f)
				if err != nil {
					return
				}
				for sc.HandleCommand() == nil {
				}
			}()
		}
	}()
	c, err := client.Connect(ln.Addr().String(), "root", "", "")
	if err != nil {
		t.Fatalf("connect to the fake MySQL server: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
