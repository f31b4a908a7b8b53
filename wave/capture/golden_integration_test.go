package capture

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

var update = flag.Bool("update", false, "rewrite the golden row messages under testdata/golden")

// goldenTypes are the column types whose row messages are kept under testdata/golden:
// one file per type, holding its insert, update and delete messages as the real
// MariaDB's binlog yields them. The messages are the project's main external contract
// (docs/design.md, "Row message"): an encoder change that alters one shows here.
var goldenTypes = []struct {
	name, column string
	insert, upd  string // SQL values
}{
	{"tinyint", "TINYINT", "-128", "127"},
	{"tinyint_unsigned", "TINYINT UNSIGNED", "255", "0"},
	{"smallint", "SMALLINT", "-32768", "32767"},
	{"mediumint_unsigned", "MEDIUMINT UNSIGNED", "16777215", "1"},
	{"int", "INT", "-2147483648", "2147483647"},
	{"bigint", "BIGINT", "-9223372036854775808", "9223372036854775807"},
	{"bigint_unsigned", "BIGINT UNSIGNED", "18446744073709551615", "0"},
	{"decimal", "DECIMAL(20,6)", "-12345678901234.123456", "0.000001"},
	{"float", "FLOAT", "1.5", "-0.25"},
	{"double", "DOUBLE", "3.141592653589793", "-1e300"},
	{"bit", "BIT(12)", "b'101010101010'", "b'1'"},
	{"date", "DATE", "'2026-12-01'", "'1000-01-01'"},
	{"time", "TIME(3)", "'-838:59:59.000'", "'12:34:56.789'"},
	{"datetime", "DATETIME(6)", "'2026-12-01 10:11:12.123456'", "'9999-12-31 23:59:59.999999'"},
	{"timestamp", "TIMESTAMP(3) NULL", "'2026-12-01 10:11:12.345'", "NULL"},
	{"year", "YEAR", "2026", "1901"},
	{"char", "CHAR(8)", "'ab'", "''"},
	{"varchar_utf8mb4", "VARCHAR(64) CHARACTER SET utf8mb4", `'quote " back \\\\ tab \t é 😀'`, "'<>&\u2028 \x01'"},
	{"text", "TEXT", "'line1\\nline2'", "NULL"},
	{"binary", "BINARY(4)", "x'00ff10'", "x'01020304'"},
	{"varbinary", "VARBINARY(16)", "x'deadbeef'", "x''"},
	{"blob", "BLOB", "x'000102'", "NULL"},
	{"enum", "ENUM('small','medium','large')", "'medium'", "'large'"},
	{"set", "SET('a','b','c')", "'a,c'", "''"},
	{"json", "JSON", `'{"b": [1, 2.5, "x"], "a": null}'`, `'"just a string"'`},
}

// TestGoldenRowMessagesIntegration writes one row per type, updates and deletes it, reads
// the binlog with the wave's capture, and compares each type's three messages with its
// golden file (positions, times and GTIDs masked). go test -run GoldenRow -update
// rewrites the files; review the diff before committing it.
func TestGoldenRowMessagesIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	ctx := testenv.Context(t)
	db, exec, _ := testenv.ScratchDatabase(t, "wave_golden")
	exec("SET time_zone = '+00:00'")
	for _, g := range goldenTypes {
		exec(fmt.Sprintf("CREATE TABLE %s.%s (id INT PRIMARY KEY, v %s)", db, g.name, g.column))
	}
	start, err := CurrentPosition(ctx, cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldenTypes {
		tb := db + "." + g.name
		exec(fmt.Sprintf("INSERT INTO %s VALUES (1, %s)", tb, g.insert))
		exec(fmt.Sprintf("UPDATE %s SET v = %s WHERE id = 1", tb, g.upd))
		exec(fmt.Sprintf("DELETE FROM %s WHERE id = 1", tb))
	}

	out := runTestCapture(t, ctx, a, "golden", 4242, []cluster.Subscription{{Name: "golden", Topic: "golden", Include: []string{db + `\..*`}}}, start)

	byTable := readMasked(t, out, 3*len(goldenTypes))
	for _, g := range goldenTypes {
		got := []byte(strings.Join(byTable[g.name], "\n") + "\n")
		got = bytes.ReplaceAll(got, []byte(db), []byte("golden"))
		path := filepath.Join("testdata", "golden", g.name+".txt")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		wantB, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (go test -run GoldenRow -update writes it)", g.name, err)
		}
		if !bytes.Equal(got, wantB) {
			t.Errorf("%s: the row messages changed (go test -run GoldenRow -update, then review the diff)\ngot:\n%s\nwant:\n%s", g.name, got, wantB)
		}
	}
}

// readMasked reads want messages from out (30 s at most between two), each as its key
// and maskMessage's line, by table.
func readMasked(t *testing.T, out <-chan Item, want int) map[string][]string {
	t.Helper()
	byTable := map[string][]string{}
	for n := 0; n < want; {
		select {
		case it := <-out:
			for _, m := range it.Msgs {
				table, line := maskMessage(t, m.Value)
				byTable[table] = append(byTable[table], fmt.Sprintf("key %s\n%s", m.Key, line))
				n++
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d row messages read in 30 s: %v", n, want, byTable)
		}
	}
	return byTable
}

// maskMessage checks a row message is one JSON object and replaces what differs from run
// to run (binlog position, times, GTID, transaction id) with placeholders, keeping the
// field order of the original.
func maskMessage(t *testing.T, v []byte) (table, line string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatalf("row message is not JSON: %v\n%s", err, v)
	}
	table, _ = m["table"].(string)
	s := string(v)
	for _, f := range []struct{ key, mask string }{{"ts", `"TS"`}, {"pos", `"POS"`}, {"xid", `"XID"`}, {"file", `"FILE"`}, {"gtid", `"GTID"`}} {
		val, ok := m[f.key]
		if !ok {
			continue
		}
		enc, _ := json.Marshal(val)
		s = strings.Replace(s, `"`+f.key+`":`+string(enc), `"`+f.key+`":`+f.mask, 1)
	}
	return table, s
}
