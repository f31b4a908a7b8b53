//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// TestInstanceAddCheck: `binlake instance add --check -f FILE` accepts the shipped
// deploy/instance.example.yaml, saying what it defines and where the waves read the
// password; refuses a misspelt key and a bad value naming the file, the line or the key;
// and connects to nothing (no coordinator is given, and none is opened).
func TestInstanceAddCheck(t *testing.T) {
	example, err := filepath.Abs("../../deploy/instance.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // no ./data here: a check that opened up's coordinator would fail
	check := func(file string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), []string{"add", "--check", "-f", file}, &out, &errOut)
		return out.String(), err
	}
	out, err := check(example)
	want := example + " is valid: instance orders, source repl@127.0.0.1:3306 (mysql, server id 10001), 1 subscription(s); each wave reads the password from its environment variable BINLAKE_ORDERS_PASSWORD\n"
	if err != nil || out != want {
		t.Fatalf("--check on the example: %v\n%s\nwant:\n%s", err, out, want)
	}
	t.Logf("binlake instance add --check -f %s:\n%s", example, out)

	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + bytes.Count(b[:bytes.Index(b, []byte("\n  password_env:"))+1], []byte("\n"))
	for _, tc := range []struct{ name, from, to, want string }{
		{"misspelt key", "  password_env:", "  pasword_env:", "typo.yaml:" + strconv.Itoa(line) + `: unknown key "source.pasword_env" (under source: addr, user, password_env, password_file, flavor, server_id, tls)`},
		// As the judge's and the agent's configs answer it (it was a plain unknown key).
		{"inline password", "  password_env: BINLAKE_ORDERS_PASSWORD", "  password: s3cret", "typo.yaml:" + strconv.Itoa(line) +
			`: field "source.password": a secret is never inline: put it in a file named by password_file, or in a variable named by password_env`},
		// Values at their lines too (they had none: "typo.yaml: source.flavor …").
		{"bad value", "flavor: mysql", "flavor: postgres", "typo.yaml:" + strconv.Itoa(lineOf(b, "flavor: mysql")) + `: field "source.flavor": "postgres": want mysql or mariadb`},
		{"unknown format", "\n    format: json", "\n    format: avro", "typo.yaml:" + strconv.Itoa(lineOf(b, "\n    format: json")+1) +
			`: field "subscriptions[0].format": format "avro": unknown; known formats: ` + strings.Join(rowenc.FormatNames(), ", ")},
	} {
		bad := filepath.Join(t.TempDir(), "typo.yaml")
		edited := bytes.Replace(b, []byte(tc.from), []byte(tc.to), 1)
		if bytes.Equal(edited, b) {
			t.Fatalf("%s: the example has no %q", tc.name, tc.from)
		}
		writeFile(t, bad, string(edited))
		out, err := check(bad)
		if err == nil || err.Error() != filepath.Dir(bad)+"/"+tc.want {
			t.Errorf("%s: %v (%s), want the error %q", tc.name, err, out, tc.want)
		}
	}

	// Tombstones asked for under a table's key, which would never be sent: a stored
	// definition runs on with them, a new one is refused at the option's line.
	tomb := filepath.Join(t.TempDir(), "tomb.yaml")
	edited := bytes.Replace(b, []byte("partition_by: pk"), []byte("partition_by: table"), 1)
	edited = bytes.Replace(edited, []byte("\n    format: json"), []byte("\n    format: debezium-json\n    format_options: {tombstones: \"true\"}"), 1)
	writeFile(t, tomb, string(edited))
	wantTomb := tomb + ":" + strconv.Itoa(lineOf(b, "\n    format: json")+2) +
		`: field "subscriptions[0].format_options.tombstones": true with partition_by: table: no tombstone would be sent`
	if out, err := check(tomb); err == nil || !strings.HasPrefix(err.Error(), wantTomb) {
		t.Errorf("tombstones under a table's key: %v (%s), want the error %q", err, out, wantTomb)
	}
	// With another problem in the file, both, in the file's order (the other hid it).
	other := bytes.Replace(edited, []byte("server_id: 10001"), []byte("server_id: 0"), 1)
	writeFile(t, tomb, string(other))
	if out, err := check(tomb); err == nil || !strings.Contains(err.Error(), "server_id") || !strings.Contains(err.Error(), wantTomb) {
		t.Errorf("tombstones under a table's key beside a bad server_id: %v (%s), want both", err, out)
	}
	edited = bytes.Replace(edited, []byte("partition_by: table"), []byte("partition_by: pk"), 1)
	writeFile(t, tomb, string(edited))
	if out, err := check(tomb); err != nil {
		t.Errorf("tombstones under the rows' keys: %v (%s), want them accepted", err, out)
	}

	// Every format option refused at once, each at its own key (one a run, at the
	// format's line, before: an outside trial).
	opts := filepath.Join(t.TempDir(), "opts.yaml")
	writeFile(t, opts, string(bytes.Replace(b, []byte("\n    format: json"),
		[]byte("\n    format: debezium-json\n    format_options: {decimal: exact, key: mine, schema: \"true\"}"), 1)))
	optLine := strconv.Itoa(lineOf(b, "\n    format: json") + 2)
	if out, err := check(opts); err == nil {
		t.Errorf("two bad format options accepted (%s)", out)
	} else {
		for _, want := range []string{
			opts + ":" + optLine + `: field "subscriptions[0].format_options.decimal": format debezium-json: option decimal "exact"`,
			opts + ":" + optLine + `: field "subscriptions[0].format_options.key": format debezium-json: option key "mine"`,
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("bad format options: %v\nwant it to say %s", err, want)
			}
		}
	}

	// Every bad value at once, in the file's order, each at its line (it took a run of
	// --check for each).
	bad := filepath.Join(t.TempDir(), "three.yaml")
	edited = b
	for _, r := range [][2]string{{"flavor: mysql", "flavor: postgres"}, {"server_id: 10001", "server_id: 0"}, {"\n    format: json", "\n    format: avro"}} {
		edited = bytes.Replace(edited, []byte(r[0]), []byte(r[1]), 1)
	}
	writeFile(t, bad, string(edited))
	if _, err := check(bad); err == nil {
		t.Error("three bad values: accepted")
	} else {
		want := []string{
			bad + ":" + strconv.Itoa(lineOf(b, "flavor: mysql")) + `: field "source.flavor": "postgres": want mysql or mariadb`,
			bad + ":" + strconv.Itoa(lineOf(b, "server_id: 10001")) + `: field "source.server_id": required`,
			bad + ":" + strconv.Itoa(lineOf(b, "\n    format: json")+1) + `: field "subscriptions[0].format": format "avro": unknown`,
		}
		got := strings.Split(err.Error(), "\n")
		if len(got) != len(want) {
			t.Fatalf("three bad values: %d lines, want %d:\n%v", len(got), len(want), err)
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("three bad values, line %d: %q, want it to start %q", i+1, got[i], want[i])
			}
		}
	}
	if left, _ := os.ReadDir("."); len(left) != 0 {
		t.Errorf("--check left %v in its working directory", left)
	}
}

// lineOf is the 1-based line of the first occurrence of sub in b.
func lineOf(b []byte, sub string) int {
	return 1 + bytes.Count(b[:bytes.Index(b, []byte(sub))], []byte("\n"))
}

// TestInstanceAddCheckHidesPassword: a source.addr pasted with the user and password (the
// short form, a go-sql-driver DSN, a URL) is refused naming the key, and the error shows
// the password as *** (docs/design.md: no secret is echoed in an error).
func TestInstanceAddCheckHidesPassword(t *testing.T) {
	example, err := filepath.Abs("../../deploy/instance.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, addr := range []string{"repl:Hunter2Pw@127.0.0.1:3306", "repl:Hunter2Pw@tcp(127.0.0.1:3306)/", "mysql://repl:Hunter2Pw@127.0.0.1:3306/"} {
		edited := bytes.Replace(b, []byte("addr: 127.0.0.1:3306"), []byte("addr: \""+addr+"\""), 1)
		if bytes.Equal(edited, b) {
			t.Fatal("the example has no addr: 127.0.0.1:3306")
		}
		file := filepath.Join(t.TempDir(), "orders.yaml")
		writeFile(t, file, string(edited))
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), []string{"add", "--check", "-f", file}, &out, &errOut)
		shown := out.String() + errOut.String()
		if err != nil {
			shown += err.Error()
		}
		if err == nil || !strings.Contains(err.Error(), `field "source.addr": "`+strings.Replace(addr, "Hunter2Pw", "***", 1)+`": want host:port`) {
			t.Errorf("%s: %v, want source.addr refused with the password as ***", addr, err)
		}
		if strings.Contains(shown, "Hunter2Pw") {
			t.Errorf("%s: the password is shown: %s", addr, shown)
		}
	}
}

// TestInstanceJudgeFlagRefusesCredentials: -judge with a user and password is refused
// naming the flag, as balancer.judge is, before the URL is printed ("the judge: …").
func TestInstanceJudgeFlagRefusesCredentials(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runInstance(context.Background(), []string{"rebalance", "-data", t.TempDir(), "-judge", "http://u:Hunter2IJ@127.0.0.1:1"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "instance rebalance: -judge: credentials in the URL would be logged: use -judge-token-file") {
		t.Fatalf("err = %v, want -judge refused", err)
	}
	if strings.Contains(out.String()+errOut.String()+err.Error(), "Hunter2IJ") {
		t.Errorf("the password is shown: %v\n%s%s", err, out.String(), errOut.String())
	}
	// A base URL with a query: the API's path went into the query (…/?region=eu/v1/rebalance).
	err = runInstance(context.Background(), []string{"rebalance", "-data", t.TempDir(), "-judge", "http://127.0.0.1:1/?region=eu"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-judge http://127.0.0.1:1/?region=eu: a query or a fragment: want the base URL alone") {
		t.Errorf("err = %v, want -judge refused for its query", err)
	}
}

// -zk with a user and password in a server is refused naming the flag, the password as
// *** (the servers are printed: "zk … root …").
func TestZKFlagRefusesCredentials(t *testing.T) {
	_, err := zkCoordinator("instance list", "127.0.0.1:2181,zk:Hunter2Z@127.0.0.1:2182", "", "", "")
	if err == nil || !strings.Contains(err.Error(), `instance list: -zk "zk:***@127.0.0.1:2182": want host:port, without a user or password`) {
		t.Fatalf("err = %v, want -zk refused", err)
	}
	if strings.Contains(err.Error(), "Hunter2Z") {
		t.Errorf("the password is shown: %v", err)
	}
}

// TestSubscriptionChanges: set -f names the subscriptions it adds, changes and removes,
// and gives the snapshot hint only when tables not read before may come (one added, or
// an include or events changed), not for an exclude added.
func TestSubscriptionChanges(t *testing.T) {
	a := cluster.Subscription{Name: "a", Topic: "t", Include: []string{`shop\..*`}}
	b := cluster.Subscription{Name: "b", Topic: "u"}
	aExcl := a
	aExcl.Exclude = []string{`shop\.tmp`}
	aWider := a
	aWider.Include = []string{`shop\..*`, `crm\..*`}
	for _, tc := range []struct {
		name     string
		cur, def []cluster.Subscription
		want     string
		widened  bool
	}{
		{"same", []cluster.Subscription{a}, []cluster.Subscription{a}, "", false},
		{"added", []cluster.Subscription{a}, []cluster.Subscription{a, b}, "subscriptions (added b)", true},
		{"removed", []cluster.Subscription{a, b}, []cluster.Subscription{a}, "subscriptions (removed b)", false},
		{"an exclude", []cluster.Subscription{a}, []cluster.Subscription{aExcl}, "subscriptions (changed a)", false},
		{"an include", []cluster.Subscription{a, b}, []cluster.Subscription{aWider}, "subscriptions (changed a; removed b)", true},
	} {
		got, widened := subscriptionChanges(tc.cur, tc.def)
		if got != tc.want || widened != tc.widened {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, widened, tc.want, tc.widened)
		}
	}
}
