package capture

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

const (
	uuidA = "aaaaaaaa-1111-11e1-9e33-c80aa9429562"
	uuidB = "bbbbbbbb-2222-11e1-9e33-c80aa9429562"
	uuidC = "cccccccc-3333-11e1-9e33-c80aa9429562"
)

func gtidNext(g string) string { return "SET @@SESSION.GTID_NEXT= '" + g + "'" }

// mysqlBinlog is a MySQL 8 binlog file as SHOW BINLOG EVENTS lists it: the header, then
// a transaction of uuidA, a DDL replicated from uuidC and another transaction of uuidA.
func mysqlBinlog(previous string) []fakeBinlogEvent {
	return []fakeBinlogEvent{
		{4, "Format_desc", 126, "Server ver: 8.0.36, Binlog ver: 4"},
		{126, "Previous_gtids", 197, previous},
		{197, "Gtid", 276, gtidNext(uuidA + ":11")},
		{276, "Query", 360, "BEGIN"},
		{360, "Table_map", 410, "table_id: 90 (db.t)"},
		{410, "Write_rows", 460, "table_id: 90 flags: STMT_END_F"},
		{460, "Xid", 491, "COMMIT /* xid=5 */"},
		{491, "Gtid", 570, gtidNext(uuidC + ":1")},
		{570, "Query", 700, "use `db`; CREATE TABLE u (id INT PRIMARY KEY)"},
		{700, "Gtid", 779, gtidNext(uuidA + ":12")},
		{779, "Query", 860, "BEGIN"},
		{860, "Table_map", 910, "table_id: 90 (db.t)"},
		{910, "Write_rows", 960, "table_id: 90 flags: STMT_END_F"},
		{960, "Xid", 991, "COMMIT /* xid=9 */"},
	}
}

const binlogFile = "binlog.000007"

func fakeMySQLSource() *fakeMySQL {
	return &fakeMySQL{serverID: 7, serverUUID: uuidA, gtidMode: "ON",
		files: map[string][]fakeBinlogEvent{binlogFile: mysqlBinlog(uuidA + ":1-10,\n" + uuidB + ":1-3")}}
}

// TestOnConnectMySQLFilePosTakesGTIDSet: an instance started by file/pos on MySQL takes
// the GTID set of that file/pos on its first connection and announces it, so that its
// next offset (and a resume on another server after a switch) goes by GTID.
func TestOnConnectMySQLFilePosTakesGTIDSet(t *testing.T) {
	src := fakeMySQLSource()
	conn := src.connect(t)
	c := &Capture{
		Options: Options{Inst: &cluster.Instance{Source: cluster.Source{Flavor: cluster.FlavorMySQL}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		resume:  cluster.Position{File: binlogFile, Pos: 700},
	}
	var owner binlogOwner
	if err := c.onConnect(conn, &owner); err != nil {
		t.Fatal(err)
	}
	if owner.serverID != 7 || owner.serverUUID != uuidA {
		t.Errorf("owner %s, want server_id 7 uuid %s", owner, uuidA)
	}
	want := uuidA + ":1-11," + uuidB + ":1-3," + uuidC + ":1"
	if c.gset == nil {
		t.Fatalf("no GTID set taken for %s:700 on MySQL (queries sent: %q)", binlogFile, src.sent())
	}
	wantSet, _ := mysql.ParseMysqlGTIDSet(want)
	if !c.gset.Equal(wantSet) {
		t.Errorf("GTID set %s, want %s", c.gset, want)
	}
	if c.resume.GTIDSet != c.gset.String() || c.resume.File != binlogFile || c.resume.Pos != 700 {
		t.Errorf("resume position %s, want %s:700 with gtid %s", c.resume.String(), binlogFile, c.gset)
	}
	if !c.announce || !c.gtidLookedUp {
		t.Errorf("announce %v, looked up %v: the set must be committed as the instance's offset", c.announce, c.gtidLookedUp)
	}
	// A reconnect does not look again: the set now follows the transactions read.
	n := len(src.sent())
	if err := c.onConnect(conn, &owner); err != nil {
		t.Fatal(err)
	}
	if got := src.sent()[n:]; len(got) != 1 {
		t.Errorf("second connection sent %q, want only the identification", got)
	}
}

// TestMySQLGTIDAt reads the GTID set at a file/pos from a MySQL binlog, in pages of any
// size, and says why it takes none when the position cannot be translated.
func TestMySQLGTIDAt(t *testing.T) {
	header := uuidA + ":1-10," + uuidB + ":1-3"
	cases := []struct {
		name     string
		src      func(*fakeMySQL)
		file     string
		pos      uint32
		want     string // the set, or
		reason   string // a part of the reason there is none
		errorHas string // or a part of the error
	}{
		{name: "after a transaction and a DDL", pos: 700, want: header + "," + uuidA + ":11," + uuidC + ":1"},
		{name: "at the end of the file", pos: 991, want: uuidA + ":1-12," + uuidB + ":1-3," + uuidC + ":1"},
		{name: "after the first transaction", pos: 491, want: uuidA + ":1-11," + uuidB + ":1-3"},
		{name: "at the first transaction", pos: 197, want: header},
		{name: "at the start of the file", pos: 4, want: header},
		{name: "pos 0 is the start of the file", pos: 0, want: header},
		{name: "inside an event", pos: 300, reason: "is not where an event of the file starts"},
		{name: "past the end", pos: 5000, reason: "past the end of the file (991)"},
		{name: "unknown file", file: "binlog.000001", pos: 700, reason: "is not in the source's binlog"},
		{name: "gtid_mode OFF", src: func(f *fakeMySQL) { f.gtidMode = "OFF" }, pos: 700, reason: `gtid_mode is "OFF"`},
		{name: "gtid_mode ON_PERMISSIVE", src: func(f *fakeMySQL) { f.gtidMode = "ON_PERMISSIVE" }, pos: 700, reason: `gtid_mode is "ON_PERMISSIVE"`},
		{name: "no gtid_mode", src: func(f *fakeMySQL) { f.gtidMode = "" }, pos: 700, reason: "the source has no GTIDs"},
		{name: "no GTID before pos", src: func(f *fakeMySQL) { f.files[binlogFile] = mysqlBinlog("") }, pos: 197, reason: "no GTID precedes binlog.000007:197"},
		{name: "first GTIDs of the server", src: func(f *fakeMySQL) { f.files[binlogFile] = mysqlBinlog("") }, pos: 491, want: uuidA + ":11"},
		{name: "bad Gtid event", src: func(f *fakeMySQL) { f.files[binlogFile][2].info = "SET @@SESSION.GTID_NEXT= 'AUTOMATIC'" }, pos: 700, errorHas: `Gtid event at 197: info "SET @@SESSION.GTID_NEXT= 'AUTOMATIC'"`},
		{name: "bad Previous_gtids", src: func(f *fakeMySQL) { f.files[binlogFile] = mysqlBinlog("not-a-set") }, pos: 700, errorHas: `Previous_gtids "not-a-set" at 126`},
	}
	for _, page := range []int{1, 3, 2000} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("page %d/%s", page, tc.name), func(t *testing.T) {
				defer func(p int) { binlogEventsPage = p }(binlogEventsPage)
				binlogEventsPage = page
				src := fakeMySQLSource()
				if tc.src != nil {
					tc.src(src)
				}
				file := tc.file
				if file == "" {
					file = binlogFile
				}
				gs, reason, err := gtidAt(src.connect(t), cluster.FlavorMySQL, file, tc.pos)
				switch {
				case tc.errorHas != "":
					if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
						t.Fatalf("error %v, want one with %q", err, tc.errorHas)
					}
				case err != nil:
					t.Fatal(err)
				case tc.reason != "":
					if gs != nil || !strings.Contains(reason, tc.reason) {
						t.Fatalf("set %v, reason %q; want no set, a reason with %q", gs, reason, tc.reason)
					}
				default:
					want, err := mysql.ParseMysqlGTIDSet(tc.want)
					if err != nil {
						t.Fatal(err)
					}
					if gs == nil || !gs.Equal(want) {
						t.Fatalf("set %v (reason %q), want %s", gs, reason, tc.want)
					}
				}
			})
		}
	}
}

// TestMySQLGTIDAtEscapesTheFileName: a file name is sent as one quoted string.
func TestMySQLGTIDAtEscapesTheFileName(t *testing.T) {
	src := fakeMySQLSource()
	_, reason, err := gtidAt(src.connect(t), cluster.FlavorMySQL, "x' OR '1", 700)
	if err != nil {
		t.Fatal(err)
	}
	sent := src.sent()
	if last := sent[len(sent)-1]; last != `SHOW BINLOG EVENTS IN 'x\' OR \'1' FROM 4 LIMIT 2000` {
		t.Errorf("sent %q", last)
	}
	if !strings.Contains(reason, "is not in the source's binlog") {
		t.Errorf("reason %q", reason)
	}
}

func TestParseGTIDNext(t *testing.T) {
	for info, want := range map[string]string{
		gtidNext(uuidA + ":11"):                uuidA + ":11",
		gtidNext(uuidA + ":mytag:3"):           uuidA + ":mytag:3",
		"  SET @@SESSION.GTID_NEXT='x:1'  ":    "",
		"SET @@SESSION.GTID_NEXT= ''":          "",
		"SET @@SESSION.GTID_NEXT= 'AUTOMATIC'": "",
		"BEGIN":                                "",
	} {
		got, err := parseGTIDNext(info)
		if want == "" {
			if err == nil {
				t.Errorf("parseGTIDNext(%q) = %q, want an error", info, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("parseGTIDNext(%q) = %q, %v; want %q", info, got, err, want)
		}
	}
}

// FuzzParseGTIDNext: any Info either fails with an error or gives a GTID that the set
// parser accepts.
func FuzzParseGTIDNext(f *testing.F) {
	f.Add(gtidNext(uuidA + ":11"))
	f.Add(gtidNext(uuidA + ":tag:1-3"))
	f.Add("SET @@SESSION.GTID_NEXT= '")
	f.Add("SET @@SESSION.GTID_NEXT= ''''")
	f.Fuzz(func(t *testing.T, info string) {
		g, err := parseGTIDNext(info)
		if err != nil {
			return
		}
		set := mysql.NewMysqlGTIDSet()
		if err := set.Update(g); err != nil {
			t.Fatalf("parseGTIDNext(%q) = %q, which Update refuses: %v", info, g, err)
		}
	})
}
