package capture

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// TestColumnCountMismatchIsFatalIntegration: a TABLE_MAP written before an ALTER, read
// after it from a binlog without column names, has fewer columns than the schema the wave
// reads now. Nothing a reconnect does changes that, so the error must be fatal (the
// instance's error state), not a retried one (an endless "reconnecting").
//
// The test server writes binlog_row_metadata=FULL, a global setting shared with other
// tests, so the event is read from it as is and its names are cleared here, as a source
// with binlog_row_metadata=MINIMAL writes it; the schema lookup is the real one.
func TestColumnCountMismatchIsFatalIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_i18_cols", "(id INT PRIMARY KEY, a INT)")
	exec("INSERT INTO " + db + ".t VALUES (1, 2)")
	exec("ALTER TABLE " + db + ".t ADD COLUMN b INT")

	c := newTestCapture(t, a, "cols", 1, nil, []cluster.Subscription{{Name: "all", Topic: "cols"}}, start)

	// With its names, the old TABLE_MAP still decodes: the ALTER alone is no error.
	c.tables = map[uint64]*rowenc.Table{}
	if err := c.handle(ctx, readTableMap(t, ctx, a, start, db, "t")); err != nil {
		t.Fatalf("TABLE_MAP with column names: %v", err)
	}

	// Read afresh: the event caches its names once asked for them.
	ev := readTableMap(t, ctx, a, start, db, "t")
	tm := ev.Event.(*replication.TableMapEvent)
	tm.ColumnName, tm.PrimaryKey, tm.PrimaryKeyPrefix = nil, nil, nil
	c.tables = map[uint64]*rowenc.Table{}
	err := c.handle(ctx, ev)
	if err == nil {
		t.Fatal("a TABLE_MAP of 2 unnamed columns against a schema of 3 decoded without error")
	}
	if !IsFatal(err) {
		t.Errorf("error %q is retried (the instance would loop reconnecting); want it fatal", err)
	}
	if want := fmt.Sprintf("table %s.t: binlog has 2 columns, the schema 3", db); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// A table no subscription takes is not looked up: the same stale, unnamed TABLE_MAP
// that stops a subscribed table's capture (above) passes, and the schema is never
// asked (an outside trial: the wave queried information_schema for every table of the
// source and warned of grants on tables it does not read; with binlog_row_metadata
// MINIMAL, an ALTER of such a table could stop the instance). Its rows are skipped.
func TestUnsubscribedTableIsNotLookedUpIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_unsub", "(id INT PRIMARY KEY, a INT)")
	exec("INSERT INTO " + db + ".t VALUES (1, 2)")
	exec("ALTER TABLE " + db + ".t ADD COLUMN b INT")

	c := newTestCapture(t, a, "unsub", 1, nil, []cluster.Subscription{{Name: "other", Topic: "unsub", Include: []string{db + `\.other`}}}, start)
	ev := readTableMap(t, ctx, a, start, db, "t")
	tm := ev.Event.(*replication.TableMapEvent)
	tm.ColumnName, tm.PrimaryKey, tm.PrimaryKeyPrefix = nil, nil, nil
	c.tables = map[uint64]*rowenc.Table{}
	if err := c.handle(ctx, ev); err != nil {
		t.Fatalf("the TABLE_MAP of a table no subscription takes: %v", err)
	}
	if _, ok := c.sc.tables[db+".t"]; ok {
		t.Errorf("the schema of %s.t was looked up", db)
	}
	if c.unwanted[tm.TableID] == nil {
		t.Errorf("table id %d not kept as unwanted: its rows would be an unknown table's", tm.TableID)
	}
}

// tableAt creates table t (columns as given) in a scratch database and returns the
// database, its exec, and the binlog position after the CREATE: where a read of the
// table's first rows starts.
func tableAt(t *testing.T, ctx context.Context, a testenv.MySQLAddr, prefix, columns string) (string, func(string), cluster.Position) {
	t.Helper()
	db, exec, _ := testenv.ScratchDatabase(t, prefix)
	exec("CREATE TABLE " + db + ".t " + columns)
	start, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	return db, exec, start
}

// newTestCapture is a capture of the test MariaDB for instance id (as replica serverID)
// with subs, from start, sending its items to out (nil: none are read); its schema
// connection is closed when t ends.
func newTestCapture(t *testing.T, a testenv.MySQLAddr, id string, serverID uint32, out chan Item, subs []cluster.Subscription, start cluster.Position) *Capture {
	t.Helper()
	inst := &cluster.Instance{ID: id, Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: serverID}}
	filter, err := cluster.NewFilter(subs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Inst: inst, Password: a.Password, Filter: filter, Out: out,
		Log: slog.New(slog.DiscardHandler), BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second,
		EventQueue: 64, Heartbeat: time.Second}, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.sc.close)
	return c
}

// runTestCapture runs newTestCapture's capture until t ends, and returns its items.
func runTestCapture(t *testing.T, ctx context.Context, a testenv.MySQLAddr, id string, serverID uint32, subs []cluster.Subscription, start cluster.Position) <-chan Item {
	t.Helper()
	out := make(chan Item, 64)
	c := newTestCapture(t, a, id, serverID, out, subs, start)
	cctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go c.Run(cctx)
	return out
}

// readTableMap reads the source's binlog from start until the TABLE_MAP event of db.table.
func readTableMap(t *testing.T, ctx context.Context, a testenv.MySQLAddr, start cluster.Position, db, table string) *replication.BinlogEvent {
	t.Helper()
	streamer, stop := streamFrom(t, a, start)
	// Stopped before the event is handed over: the syncer's parser goes on reading, and
	// its rows events refer to the table map a test then changes.
	defer stop()
	for {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			t.Fatalf("reading the binlog for the TABLE_MAP of %s.%s: %v", db, table, err)
		}
		if tm, ok := ev.Event.(*replication.TableMapEvent); ok && string(tm.Schema) == db && string(tm.Table) == table {
			return ev
		}
	}
}

// TestSchemaPrimaryKeyInKeyOrderIntegration: without the binlog's primary-key metadata,
// the key comes from the schema in key order, not the columns' order, so that a row's
// message key is the same as with the metadata, and as a snapshot's of the same row.
func TestSchemaPrimaryKeyInKeyOrderIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_pk_order", "(a INT NOT NULL, b INT NOT NULL, c INT, PRIMARY KEY (b, a))")
	exec("INSERT INTO " + db + ".t VALUES (1, 2, 3)")
	sc := newSchema(Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}, slog.New(slog.DiscardHandler))
	defer sc.close()
	for _, metadata := range []bool{true, false} {
		tm := readTableMap(t, ctx, a, start, db, "t").Event.(*replication.TableMapEvent)
		if !metadata {
			tm.PrimaryKey, tm.PrimaryKeyPrefix = nil, nil
		}
		tb, err := buildTable(ctx, tm, cluster.FlavorMariaDB, sc)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(tb.PK) != "[1 0]" {
			t.Errorf("with the binlog's key metadata %v: PK %v, want [1 0] (b, then a)", metadata, tb.PK)
		}
	}
}

// TestSchemaCacheOutlivesLaterQueriesIntegration: a cached lookup stays right while other
// queries run. go-mysql's GetString returns a string over the result's packet buffer, and
// Close returns that buffer to a process-wide pool; names kept from a closed result were
// overwritten by the next queries (any connection's), so a snapshot read later matched no
// column by name and sent MariaDB JSON as text (TestSnapshotKillRestartIntegration, run
// beside other tests: 21,334 rows).
func TestSchemaCacheOutlivesLaterQueriesIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, _ := testenv.ScratchDatabase(t, "wave_schema_alias")
	exec("CREATE TABLE " + db + ".t_a (k2 INT NOT NULL, meta JSON NULL, e ENUM('x','y') NULL, k1 INT NOT NULL, PRIMARY KEY (k1, k2))")
	exec("CREATE TABLE " + db + ".t_b (zz INT NOT NULL PRIMARY KEY, qqqq JSON NULL, w ENUM('p','q') NULL, zy INT NOT NULL)")
	log := slog.New(slog.DiscardHandler)
	sc := newSchema(Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}, log)
	defer sc.close()
	info, err := sc.lookup(ctx, db, "t_a")
	if err != nil {
		t.Fatal(err)
	}
	// Other lookups, on a schema of their own: the pool the buffers go back to is shared.
	other := newSchema(Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}, log)
	defer other.close()
	for range 20 {
		if _, err := other.lookup(ctx, db, "t_b"); err != nil {
			t.Fatal(err)
		}
		other.invalidate()
	}
	var got []string
	for _, c := range info.cols {
		got = append(got, fmt.Sprintf("%s json=%v values=%v", c.name, c.json, c.values))
	}
	if want := "[k2 json=false values=[] meta json=true values=[] e json=false values=[x y] k1 json=false values=[]]"; fmt.Sprint(got) != want {
		t.Errorf("cached columns of t_a after other queries: %v, want %s", got, want)
	}
	if fmt.Sprint(info.pk) != "[k1 k2]" {
		t.Errorf("cached primary key of t_a after other queries: %q, want [k1 k2]", info.pk)
	}
	// The snapshot's layout of the table, from the cached lookup: meta is JSON.
	src := &snapshotSource{ep: Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}}
	defer src.close()
	tb, err := src.table(ctx, sc, db, "t_a")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tb.Columns {
		if c.Name == "meta" && !c.JSON {
			t.Errorf("snapshot layout of t_a: meta is not JSON (it would be sent as a string)")
		}
	}
}

// TestSchemaFillsWhatMinimalMetadataLacks: a binlog without the optional metadata (a
// source with binlog_row_metadata MINIMAL or MariaDB's default NO_LOG) names no ENUM or
// SET member, no character set and no geometry type; the schema gives them, so members
// go out by name (they went out as numbers: "e":2,"s":3), latin1 text is decoded and a
// POINT column is one (Debezium's Point). The test server writes FULL, a global setting
// shared with other tests, so the event's optional metadata is cleared here, as such a
// source writes it. A snapshot's table takes the geometry types from the schema too.
func TestSchemaFillsWhatMinimalMetadataLacksIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	c, db, tb := tableBuilt(t, ctx, a, "wave_minimal_meta",
		"(id INT PRIMARY KEY, e ENUM('p','q'), s SET('a','b'), l VARCHAR(8) CHARACTER SET latin1, u VARCHAR(8) CHARACTER SET utf8mb4, p POINT, gc GEOMETRYCOLLECTION, g GEOMETRY)",
		"(1, 'q', 'a,b', 'x', 'y', POINT(1, 2), NULL, NULL)", func(tm *replication.TableMapEvent) {
			tm.SignednessBitmap, tm.DefaultCharset, tm.ColumnCharset, tm.EnumSetDefaultCharset, tm.EnumSetColumnCharset = nil, nil, nil, nil, nil
			tm.SetStrValue, tm.EnumStrValue, tm.ColumnName, tm.GeometryType, tm.PrimaryKey, tm.PrimaryKeyPrefix = nil, nil, nil, nil, nil, nil
		})
	cols := map[string]rowenc.Column{}
	for _, col := range tb.Columns {
		cols[col.Name] = col
	}
	if got := cols["e"].Enum; !slices.Equal(got, []string{"p", "q"}) {
		t.Errorf("ENUM members %q, want [p q]", got)
	}
	if got := cols["s"].Set; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("SET members %q, want [a b]", got)
	}
	if cs := cols["l"].Charset; cs == nil || cs.Name != "latin1" {
		t.Errorf("the latin1 column's charset: %v", cs)
	}
	if cs := cols["u"].Charset; cs != nil {
		t.Errorf("the utf8mb4 column's charset: %s, want none (UTF-8 already)", cs.Name)
	}
	geoms := map[string]rowenc.GeometryType{"p": rowenc.GeometryPoint, "gc": rowenc.GeometryCollection, "g": rowenc.GeometryAny}
	for name, want := range geoms {
		if got := cols[name].Geometry; got != want {
			t.Errorf("column %s: geometry type %v, want %v", name, got, want)
		}
	}
	src := &snapshotSource{ep: Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}}
	defer src.close()
	snap, err := src.table(ctx, c.sc, db, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range snap.Columns {
		if want, ok := geoms[col.Name]; ok && col.Geometry != want {
			t.Errorf("snapshot column %s: geometry type %v, want %v", col.Name, col.Geometry, want)
		}
	}
}

// TestUnrelatedDDLKeepsTheCachedSchemaIntegration: a capture behind its source keeps a
// table's cached columns through a DDL of another table. Rows of u are read while its
// prefs is TEXT; the capture then stalls (its items not read) at the DDL of another
// table, meanwhile a row holding JSON text is written to u and prefs becomes JSON. That
// row was written to a TEXT column and goes out as the string it is: the capture forgot
// every table at any DDL and read u again as the source has it now (an outside trial,
// pt-online-schema-change's triggers and gh-ost's tables being such DDL, saw it sent as
// a JSON object). The row after the ALTER goes out as JSON.
func TestUnrelatedDDLKeepsTheCachedSchemaIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_schema_lag", "(id INT PRIMARY KEY, prefs TEXT)")
	out := make(chan Item) // unbuffered: the capture stalls at its first item not read
	c := newTestCapture(t, a, "lag", 47201, out, []cluster.Subscription{{Name: "s", Topic: "rows", Include: []string{db + `\.t`}}}, start)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go c.Run(cctx)
	next := func(what string) Item {
		t.Helper()
		for {
			select {
			case it := <-out:
				if len(it.Msgs) > 0 {
					return it
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no %s from the capture", what)
			}
		}
	}
	exec("INSERT INTO " + db + ".t VALUES (1, '[1]')")
	if v := string(next("first row").Msgs[0].Value); !strings.Contains(v, `"prefs":"[1]"`) {
		t.Fatalf("first row: %s", v)
	}
	// Nothing read now: the capture stalls at the CREATE's item (its boundary).
	exec("CREATE TABLE " + db + ".unrelated (id INT)")
	exec("INSERT INTO " + db + ".t VALUES (2, '{\"a\": 1}')")
	exec("ALTER TABLE " + db + ".t MODIFY prefs JSON")
	exec("INSERT INTO " + db + ".t VALUES (3, '{\"a\": 1}')")
	if v := string(next("row 2").Msgs[0].Value); !strings.Contains(v, `"prefs":"{\"a\": 1}"`) {
		t.Errorf("row 2, written while prefs was TEXT: %s; want prefs the string it is", v)
	}
	var ddl, row3 string
	for row3 == "" {
		v := string(next("the ALTER and row 3").Msgs[0].Value)
		if strings.Contains(v, `"type":"ddl"`) {
			ddl = v
			continue
		}
		row3 = v
	}
	if ddl == "" || !strings.Contains(row3, `"prefs":{"a":1}`) {
		t.Errorf("after the ALTER: ddl %q, row 3 %s; want the ALTER's message, then prefs as JSON", ddl, row3)
	}
}

// streamFrom is a binlog stream of the test source from start, as a replica of its own
// reads it, and its stop.
func streamFrom(t *testing.T, a testenv.MySQLAddr, start cluster.Position) (*replication.BinlogStreamer, func()) {
	t.Helper()
	host, port, _ := net.SplitHostPort(a.Addr)
	p, _ := strconv.ParseUint(port, 10, 16)
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: testenv.ReplicaServerID(), Flavor: cluster.FlavorMariaDB, Host: host, Port: uint16(p),
		User: a.User, Password: a.Password, Logger: slog.New(slog.DiscardHandler),
	})
	streamer, err := syncer.StartSync(mysql.Position{Name: start.File, Pos: start.Pos})
	if err != nil {
		syncer.Close()
		t.Fatal(err)
	}
	return streamer, syncer.Close
}

// TestEnumMembersInTheirCharsetIntegration: the binlog's metadata names an ENUM's or
// SET's members in the column's character set; a latin1 ENUM('é','ü') went out as
// "\ufffd" for both (in every format), where the snapshot gave "é" and "ü".
func TestEnumMembersInTheirCharsetIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	_, _, tb := tableBuilt(t, ctx, a, "wave_enum_cs",
		"(id INT PRIMARY KEY, e ENUM('é','ü') CHARACTER SET latin1, s SET('ä','b') CHARACTER SET latin1, u ENUM('ö','x') CHARACTER SET utf8mb4)",
		"(1, 'ü', 'ä,b', 'ö')", nil)
	want := map[string][]string{"e": {"é", "ü"}, "s": {"ä", "b"}, "u": {"ö", "x"}}
	for _, col := range tb.Columns {
		got := col.Enum
		if col.Name == "s" {
			got = col.Set
		}
		if w, ok := want[col.Name]; ok && !slices.Equal(got, w) {
			t.Errorf("%s's members %q, want %q", col.Name, got, w)
		}
	}
}

// tableBuilt is the table a capture builds from the TABLE_MAP event of an insert of
// values into db.t (made with columns), the event's optional metadata cleared by strip
// first (nil: kept, as the test server writes it: FULL), with the capture and db.
func tableBuilt(t *testing.T, ctx context.Context, a testenv.MySQLAddr, prefix, columns, values string, strip func(*replication.TableMapEvent)) (*Capture, string, *rowenc.Table) {
	t.Helper()
	db, exec, start := tableAt(t, ctx, a, prefix, columns)
	c := newTestCapture(t, a, prefix, 1, nil, []cluster.Subscription{{Name: "all", Topic: prefix}}, start)
	exec("INSERT INTO " + db + ".t VALUES " + values)
	ev := readTableMap(t, ctx, a, start, db, "t")
	tm := ev.Event.(*replication.TableMapEvent)
	if strip != nil {
		strip(tm)
	}
	c.tables = map[uint64]*rowenc.Table{}
	if err := c.handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	tb := c.tables[tm.TableID]
	if tb == nil {
		t.Fatal("no table built")
	}
	return c, db, tb
}

// TestBlobSizesIntegration: a BLOB or TEXT column knows its size, from the binlog's table
// map and from a snapshot's result set alike, so that canal's mysqlType names it as Canal
// does (TestCanalMySQLTypeOfBlobs): a LONGTEXT said text, a MEDIUMBLOB blob (an outside trial; a consumer building
// its tables from mysqlType made TEXT columns of 64 KB for LONGTEXT data).
func TestBlobSizesIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_blobsize", "(id INT PRIMARY KEY, a TINYTEXT, b TEXT, c MEDIUMTEXT, d LONGTEXT, "+
		"e TINYBLOB, f BLOB, g MEDIUMBLOB, h LONGBLOB, i LONGTEXT CHARACTER SET latin1) DEFAULT CHARSET=utf8mb4")
	exec("INSERT INTO " + db + ".t (id) VALUES (1)")
	want := []uint8{0, 1, 2, 3, 4, 1, 2, 3, 4, 4} // the length prefixes' bytes: TINY 1 … LONG 4
	sc := newSchema(Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}, slog.New(slog.DiscardHandler))
	defer sc.close()
	tm := readTableMap(t, ctx, a, start, db, "t").Event.(*replication.TableMapEvent)
	fromBinlog, err := buildTable(ctx, tm, cluster.FlavorMariaDB, sc)
	if err != nil {
		t.Fatal(err)
	}
	src := &snapshotSource{ep: Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}}
	defer src.close()
	fromSnapshot, err := src.table(ctx, sc, db, "t")
	if err != nil {
		t.Fatal(err)
	}
	for name, tb := range map[string]*rowenc.Table{"binlog": fromBinlog, "snapshot": fromSnapshot} {
		var got []uint8
		for _, c := range tb.Columns {
			got = append(got, c.BlobBytes)
		}
		if !slices.Equal(got, want) {
			t.Errorf("from the %s: BLOB and TEXT sizes %v, want %v", name, got, want)
		}
	}
}

// MariaDB's JSON (a LONGTEXT with a json_valid check) is JSON to a user with only a
// table-level SELECT on the table, the grant the wave's own warning advises:
// information_schema.CHECK_CONSTRAINTS shows such a user none, and the column went out as
// text without a word (an outside trial); SHOW CREATE TABLE shows the check.
func TestJSONWithATableLevelGrantIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_tlgrant", "(id INT PRIMARY KEY, j JSON, note LONGTEXT)")
	exec("INSERT INTO " + db + ".t VALUES (1, '{\"k\":3}', 'x')")
	name := fmt.Sprintf("binlake_tl%d", time.Now().UnixNano()%1e9)
	exec("CREATE USER '" + name + "'@'%' IDENTIFIED BY 'pw'")
	t.Cleanup(func() { exec("DROP USER IF EXISTS '" + name + "'@'%'") })
	exec("GRANT SELECT ON " + db + ".t TO '" + name + "'@'%'")

	sc := newSchema(Endpoint{Addr: a.Addr, User: name, Password: "pw"}, slog.New(slog.DiscardHandler))
	defer sc.close()
	tm := readTableMap(t, ctx, a, start, db, "t").Event.(*replication.TableMapEvent)
	tb, err := buildTable(ctx, tm, cluster.FlavorMariaDB, sc)
	if err != nil {
		t.Fatal(err)
	}
	if got := []bool{tb.Columns[1].JSON, tb.Columns[2].JSON}; !got[0] || got[1] {
		t.Errorf("JSON of j, note: %v, want [true false]", got)
	}
}
