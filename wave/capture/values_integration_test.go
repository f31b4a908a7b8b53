package capture

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// serverValues are values whose binlog form differs from what a SELECT shows unless the
// capture rebuilds it: each one's insert message must carry what the SELECT does.
var serverValues = []struct {
	name, column, value string
	json, canal         string // the value in the json format's data, and in canal-json's
	canalType           string // canal-json's mysqlType of the column, when given
	maxwell, debezium   string // the value in maxwell-json's data and debezium-json's after, when given
}{
	// The binlog leaves out a BINARY's trailing 0x00 padding (SELECT: 61000000).
	{"binary_pad", "BINARY(4)", "x'61'", `"YQAAAA=="`, `"a\u0000\u0000\u0000"`, "", "", ""},
	// A TIME's fraction of zero has the column's digits (SELECT: 12:34:56.000000).
	{"time6_zero_fraction", "TIME(6)", "'12:34:56'", `"12:34:56.000000"`, `"12:34:56.000000"`, "time(6)", "", ""},
	{"time3_zero", "TIME(3)", "'00:00:00'", `"00:00:00.000"`, `"00:00:00.000"`, "time(3)", "", ""},
	{"time0", "TIME", "'-838:59:59'", `"-838:59:59"`, `"-838:59:59"`, "time", "", ""},
	// Second 0 with a fraction is the epoch's, not the zero TIMESTAMP (unix_timestamp 0.000001).
	{"timestamp6_epoch", "TIMESTAMP(6) NULL", "'1970-01-01 00:00:00.000001'", `"1970-01-01T00:00:00.000001Z"`, `"1970-01-01 00:00:00.000001"`, "", "", ""},
	{"timestamp6_zero", "TIMESTAMP(6) NULL", "'0000-00-00 00:00:00'", `"0000-00-00T00:00:00.000000"`, `"0000-00-00 00:00:00.000000"`, "", "", ""},
	// Text in a character set other than UTF-8 is the binlog's bytes in that set (SELECT,
	// a snapshot, Canal and Debezium: "café\u0081"; it came out "caf\ufffd\ufffd").
	{"latin1", "VARCHAR(20) CHARACTER SET latin1", "CONCAT('caf', x'e981')", "\"café\u0081\"", "\"café\u0081\"", "", "", ""},
	{"latin1_text", "TEXT CHARACTER SET latin1", "x'ff4e'", `"ÿN"`, `"ÿN"`, "", "", ""},
	{"cp1251", "CHAR(4) CHARACTER SET cp1251", "x'cff0e8e2'", `"Прив"`, `"Прив"`, "", "", ""},
	{"gbk", "VARCHAR(8) CHARACTER SET gbk", "x'c4e3bac3'", `"你好"`, `"你好"`, "", "", ""},
	// A geometry is MySQL's SRID and WKB: Maxwell writes its WKT, Debezium a Point or
	// Geometry struct (the WKB without the SRID), Canal the bytes and the column's type.
	{"point", "POINT", "POINT(1.5, -2)", `"AAAAAAEBAAAAAAAAAAAA+D8AAAAAAAAAwA=="`,
		`"\u0000\u0000\u0000\u0000\u0001\u0001\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000ø?\u0000\u0000\u0000\u0000\u0000\u0000\u0000À"`,
		"point", `"POINT (1.5 -2)"`, `{"x":1.5,"y":-2.0,"wkb":"AQEAAAAAAAAAAAD4PwAAAAAAAADA","srid":null}`},
	{"polygon_srid", "GEOMETRY", "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))', 4326)",
		`"5hAAAAEDAAAAAQAAAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA8D8AAAAAAAAAAAAAAAAAAPA/AAAAAAAA8D8AAAAAAAAAAAAAAAAAAAAA"`, "", "geometry",
		`"POLYGON ((0 0, 1 0, 1 1, 0 0))"`, `{"wkb":"AQMAAAABAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADwPwAAAAAAAAAAAAAAAAAA8D8AAAAAAADwPwAAAAAAAAAAAAAAAAAAAAA=","srid":4326}`},
	{"collection_empty", "GEOMETRYCOLLECTION", "ST_GeomFromText('GEOMETRYCOLLECTION EMPTY')", `"AAAAAAEHAAAAAAAAAA=="`,
		`"\u0000\u0000\u0000\u0000\u0001\u0007\u0000\u0000\u0000\u0000\u0000\u0000\u0000"`, "geomcollection",
		`"GEOMETRYCOLLECTION EMPTY"`, `{"wkb":"AQcAAAAAAAAA","srid":null}`},
	// ALLOW_INVALID_DATES stores a day up to 31 in any month as written (SELECT and Canal
	// show it so): not moved into the next month (it came out 2024-03-01T10:00:00.5).
	{"datetime1_feb30", "DATETIME(1)", "'2024-02-30 10:00:00.5'", `"2024-02-30T10:00:00.5"`, `"2024-02-30 10:00:00.5"`, "datetime(1)",
		`"2024-02-30 10:00:00.5"`, `"2024-02-30 10:00:00.5"`},
	{"datetime_feb29_2023", "DATETIME", "'2023-02-29 00:00:00'", `"2023-02-29T00:00:00"`, `"2023-02-29 00:00:00"`, "datetime",
		`"2023-02-29 00:00:00"`, `"2023-02-29 00:00:00"`},
	{"datetime6_nov31", "DATETIME(6)", "'2025-11-31 23:59:59.999999'", `"2025-11-31T23:59:59.999999"`, `"2025-11-31 23:59:59.999999"`, "datetime(6)",
		`"2025-11-31 23:59:59.999999"`, `"2025-11-31 23:59:59.999999"`},
	{"date_feb31", "DATE", "'2024-02-31'", `"2024-02-31"`, `"2024-02-31"`, "date", `"2024-02-31"`, `"2024-02-31"`},
	{"datetime_leap_day", "DATETIME", "'2024-02-29 10:00:00'", `"2024-02-29T10:00:00"`, `"2024-02-29 10:00:00"`, "datetime",
		`"2024-02-29 10:00:00"`, `"2024-02-29 10:00:00"`},
	// MariaDB's UUID, INET4 and INET6 are BINARY(16) or BINARY(4) to the binlog: their
	// text, as a SELECT (and a snapshot) shows it, not base64 of their bytes (an outside
	// trial); a trailing 0x00 the binlog leaves out is padded back first.
	{"uuid", "UUID", "'123e4567-e89b-12d3-a456-426655440000'", `"123e4567-e89b-12d3-a456-426655440000"`,
		`"123e4567-e89b-12d3-a456-426655440000"`, "uuid", `"123e4567-e89b-12d3-a456-426655440000"`, `"123e4567-e89b-12d3-a456-426655440000"`},
	{"inet6", "INET6", "'2001:db8::1'", `"2001:db8::1"`, `"2001:db8::1"`, "inet6", `"2001:db8::1"`, `"2001:db8::1"`},
	{"inet6_mapped", "INET6", "'::ffff:10.0.0.0'", `"::ffff:10.0.0.0"`, `"::ffff:10.0.0.0"`, "inet6", "", ""},
	{"inet4", "INET4", "'10.0.0.0'", `"10.0.0.0"`, `"10.0.0.0"`, "inet4", `"10.0.0.0"`, `"10.0.0.0"`},
	{"timestamp3", "TIMESTAMP(3) NULL", "'2023-11-14 22:13:20.5'", `"2023-11-14T22:13:20.500Z"`, `"2023-11-14 22:13:20.500"`, "timestamp(3)",
		`"2023-11-14 22:13:20.500"`, `"2023-11-14 22:13:20.500"`},
}

// serverValuesEpoch are debezium-json's values with temporal: epoch, where given. A date
// java.time cannot hold is 0 (1970-01-01): what Debezium takes for it with
// event.deserialization.failure.handling.mode warn or skip (by default it stops).
var serverValuesEpoch = map[string]string{
	"datetime1_feb30": "0", "datetime_feb29_2023": "0", "datetime6_nov31": "0", "date_feb31": "0",
	"datetime_leap_day": "1709200800000", "timestamp3": `"2023-11-14T22:13:20.500Z"`,
}

// TestServerValuesIntegration writes each of serverValues into a table of its own (in
// UTC, allowing invalid dates) and checks the insert's json, canal-json, maxwell-json and
// debezium-json messages read from the real MariaDB's binlog (rows read in place).
func TestServerValuesIntegration(t *testing.T) { testServerValues(t, false) }

// TestServerValuesDecodedIntegration is TestServerValuesIntegration for the rows
// go-mysql decodes: each table has a latin1 column too, whose text Reader.Read has
// go-mysql decode, so that none of its rows is read in place.
func TestServerValuesDecodedIntegration(t *testing.T) { testServerValues(t, true) }

func testServerValues(t *testing.T, decoded bool) {
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	db, exec, _ := testenv.ScratchDatabase(t, "server_values")
	exec("SET time_zone = '+00:00'")
	exec("SET sql_mode = 'ALLOW_INVALID_DATES'")
	latin1 := ""
	if decoded {
		latin1 = ", l VARCHAR(4) CHARACTER SET latin1"
	}
	for _, v := range serverValues {
		exec(fmt.Sprintf("CREATE TABLE %s.%s (id INT PRIMARY KEY, v %s%s)", db, v.name, v.column, latin1))
	}
	exec(fmt.Sprintf("CREATE TABLE %s.zz_done (id INT PRIMARY KEY, v INT)", db))
	start, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range serverValues {
		exec(fmt.Sprintf("INSERT INTO %s.%s (id, v) VALUES (1, %s)", db, v.name, v.value))
	}
	// The last row: once every subscription has its message, it has every earlier one.
	exec(fmt.Sprintf("INSERT INTO %s.zz_done VALUES (1, 1)", db))
	include := []string{db + `\..*`}
	subs := []cluster.Subscription{{Name: "json", Topic: "json", Include: include},
		{Name: "canal", Topic: "canal", Format: "canal-json", Include: include},
		{Name: "maxwell", Topic: "maxwell", Format: "maxwell-json", Include: include},
		{Name: "debezium", Topic: "debezium", Format: "debezium-json", Include: include},
		{Name: "debezium-epoch", Topic: "debezium-epoch", Format: "debezium-json",
			FormatOptions: map[string]string{"temporal": "epoch"}, Include: include}}
	out := runTestCapture(t, ctx, a, "values", testenv.ReplicaServerID(), subs, start)

	// topic/table: the value of the table's message; canalType/table: its mysqlType.
	got := map[string]string{}
	for done := 0; done < len(subs); {
		select {
		case it := <-out:
			for _, m := range it.Msgs {
				table, v, typ := changedValue(t, m.Topic, m.Value)
				switch {
				case table == "zz_done":
					done++
				default:
					got[m.Topic+"/"+table] = v
					if m.Topic == "canal" {
						got["canalType/"+table] = typ
					}
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d subscriptions done in 30 s: %v", done, len(subs), got)
		}
	}
	for _, v := range serverValues {
		if g := got["json/"+v.name]; g != v.json {
			t.Errorf("%s %s: json %s, want %s", v.column, v.value, g, v.json)
		}
		if g := got["canal/"+v.name]; v.canal != "" && g != v.canal {
			t.Errorf("%s %s: canal-json %s, want %s", v.column, v.value, g, v.canal)
		}
		if g := got["maxwell/"+v.name]; v.maxwell != "" && g != v.maxwell {
			t.Errorf("%s %s: maxwell-json %s, want %s", v.column, v.value, g, v.maxwell)
		}
		if g := got["debezium/"+v.name]; v.debezium != "" && g != v.debezium {
			t.Errorf("%s %s: debezium-json %s, want %s", v.column, v.value, g, v.debezium)
		}
		if g, want := got["debezium-epoch/"+v.name], serverValuesEpoch[v.name]; want != "" && g != want {
			t.Errorf("%s %s: debezium-json (temporal: epoch) %s, want %s", v.column, v.value, g, want)
		}
		if g := got["canalType/"+v.name]; v.canalType != "" && g != v.canalType {
			t.Errorf("%s: canal-json mysqlType %s, want %s", v.column, g, v.canalType)
		}
	}
}

// changedValue is the table and the value of column v (empty when the message has none)
// in a row message of the json format (topic json), canal-json's, maxwell-json's or
// debezium-json's, with canal-json's mysqlType of v.
func changedValue(t *testing.T, topic string, value []byte) (table, v, canalType string) {
	t.Helper()
	var m struct {
		Table     string `json:"table"`
		Data      json.RawMessage
		MySQLType map[string]string `json:"mysqlType"`
		After     json.RawMessage   `json:"after"`
		Source    struct{ Table string }
	}
	if err := json.Unmarshal(value, &m); err != nil {
		t.Fatalf("%s: %v\n%s", topic, err, value)
	}
	data := m.Data
	if strings.HasPrefix(topic, "debezium") {
		m.Table, data = m.Source.Table, m.After
	}
	if topic == "canal" {
		var rows []json.RawMessage
		if err := json.Unmarshal(m.Data, &rows); err != nil || len(rows) != 1 {
			t.Fatalf("canal-json data %s: %v", m.Data, err)
		}
		data = rows[0]
	}
	var row map[string]json.RawMessage
	if err := json.Unmarshal(data, &row); err != nil {
		t.Fatalf("%s data %s: %v", topic, data, err)
	}
	return m.Table, strings.TrimSpace(string(row["v"])), m.MySQLType["v"]
}
