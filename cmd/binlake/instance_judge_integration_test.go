//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/judgetest"
	"github.com/binlake/binlake/judge/judgetest/wavefleet"
	"github.com/binlake/binlake/wave/cluster"
)

// TestInstanceAddAsksJudgeWithToken: `binlake instance add -judge` against a judge that
// requires a token is refused without it (saying so, and that -node places without the
// judge) and, given the token by file,
// assigns the instance where the judge answers among the live waves, on the real
// ZooKeeper: the judge's first choice, wave-idle, runs no wave (its agent still reports),
// so it is asked again without it and answers wave-busy.
func TestInstanceAddAsksJudgeWithToken(t *testing.T) {
	zk := testenv.Require(t, testenv.ZooKeeper)
	root := fmt.Sprintf("/binlake-judge-add-%d", time.Now().UnixNano())
	dir := t.TempDir()

	srv := judgetest.Start(t, "s3cret")
	registerWaves(t, zk, root, "wave-busy")

	instFile := filepath.Join(dir, "orders.yaml")
	writeFile(t, instFile, "id: orders\nsource:\n  addr: 127.0.0.1:3307\n  user: binlake\n  server_id: 4242\nsubscriptions:\n  - name: all\n    topic: orders.rows\n")
	tokenFile := filepath.Join(dir, "judge.token")
	writeFile(t, tokenFile, "s3cret\n")
	t.Setenv(judge.TokenEnv, "")

	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), append([]string{"add", "-zk", zk, "-root", root, "-judge", srv.URL, "-f", instFile}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	out, err := run()
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "-judge-token-file") || !strings.Contains(err.Error(), "-node NAME") {
		t.Fatalf("without the token: %v (%s), want the judge's 401, how to give the token, and how to place without the judge", err, out)
	}
	out, err = run("-judge-token-file", tokenFile)
	if err != nil {
		t.Fatalf("with the token: %v (%s)", err, out)
	}
	if !strings.Contains(out, "instance orders added, assigned to wave-busy") {
		t.Fatalf("with the token: %q, want orders assigned to wave-busy, the judge's choice among the live waves", out)
	}
}

// registerWaves makes nodes live waves under root on the ZooKeeper at zkAddr, for as
// long as the returned coordinator's session lasts (the test's, or until closed).
func registerWaves(t *testing.T, zkAddr, root string, nodes ...string) coord.Coordinator {
	t.Helper()
	ctx := t.Context()
	c, err := zk.New(ctx, zk.Options{Servers: strings.Split(zkAddr, ","), Root: root, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, node := range nodes {
		if err := c.Register(ctx, cluster.GroupWaves, coord.Member{ID: node}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInstanceAddMeasuresSourceForTheJudge: `binlake instance add -judge` measures the
// source's binlog growth on the real MariaDB (while this test writes to it), sends it to
// the judge as the instance's expected bytes/s, and says how the wave was chosen: the
// utilisation algorithm, the wave's predicted peak before and after, the hint. The
// reservation the judge made holds that work. A source it cannot measure is said so,
// and the instance is added all the same.
func TestInstanceAddMeasuresSourceForTheJudge(t *testing.T) {
	zk := testenv.Require(t, testenv.ZooKeeper)
	a := testenv.RequireMySQL(t)
	root := fmt.Sprintf("/binlake-judge-measure-%d", time.Now().UnixNano())
	dir := t.TempDir()
	// Prices low enough that both waves fit what the source measures, though the tests
	// beside this one write to it too: at 2.3 MB/s (a CI run) and prices 100 times these,
	// wave-a had no room under its cap and the judge chose among one candidate.
	srv := judgetest.StartFleet(t, "utilisation", []wavefleet.Wave{
		{Node: "wave-a", Cores: 8, UtilPct: 40, Row: 2e-6, Byte: 2e-11, Instances: map[string]float64{"a1": 1000, "a2": 400}},
		{Node: "wave-b", Cores: 16, UtilPct: 48, Row: 1e-6, Byte: 1e-11, Instances: map[string]float64{"b1": 2000}},
	})
	registerWaves(t, zk, root, "wave-a", "wave-b")
	t.Setenv("BINLAKE_TEST_SOURCE_PASSWORD", a.Password)
	source := fmt.Sprintf("source:\n  addr: %s\n  user: %s\n  password_env: BINLAKE_TEST_SOURCE_PASSWORD\n  flavor: mariadb\n  server_id: 4243\n", a.Addr, a.User)
	subs := "subscriptions:\n  - name: all\n    topic: orders.rows\n"
	writeFile(t, filepath.Join(dir, "orders.yaml"), "id: orders\n"+source+subs)
	add := func(file string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), []string{"add", "-zk", zk, "-root", root, "-judge", srv.URL, "-f", file, "-measure", "2s"}, &out, &errOut)
		if err != nil {
			t.Fatalf("instance add: %v (%s%s)", err, out.String(), errOut.String())
		}
		return out.String()
	}

	db, exec, _ := testenv.ScratchDatabase(t, "measure")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(1000))")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := range 20 {
			time.Sleep(100 * time.Millisecond)
			exec(fmt.Sprintf("INSERT INTO %s.t VALUES (%d, REPEAT('x', 1000))", db, k))
		}
	}()
	out := add(filepath.Join(dir, "orders.yaml"))
	<-done
	for _, want := range []string{
		"source binlog of " + a.Addr + ": ", "sent to the judge as the binlog the instance will read and, its filters unknown, as its bytes/s published",
		"instance orders added, assigned to wave-",
		"chosen by the judge's utilisation algorithm among 2 candidates: wave-", "'s predicted peak utilisation ",
		"with the instance (", "; expected work ", " of binlog (hint: rows/s from the bytes/s at the fleet's ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("instance add said:\n%s\nwant %q in it", out, want)
		}
	}

	// The rate covers at least this test's own rows (20 KB in 2 s); the source is shared
	// with the tests running beside this one, whose writes may add megabytes a second.
	if m := measuredRate.FindStringSubmatch(out); m == nil {
		t.Errorf("instance add said:\n%s\nwant the source's binlog rate over 2 s in it", out)
	} else if v, _ := strconv.ParseFloat(m[1], 64); v*map[string]float64{"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m[2]] < 5e3 {
		t.Errorf("instance add measured %s %s/s, want at least 5 KB/s (this test wrote ~10 KB/s)", m[1], m[2])
	}

	// The judge holds the measured work on the chosen wave, in cores at its prices.
	node := strings.Fields(out[strings.Index(out, "assigned to ")+len("assigned to "):])[0]
	code, body := getURL(t, srv.URL+"/v1/nodes/"+node)
	var d struct{ Reservations []api.Reservation }
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil || len(d.Reservations) != 1 {
		t.Fatalf("GET /v1/nodes/%s: %d %v %s", node, code, err, body)
	}
	r := d.Reservations[0]
	if r.Instance != "orders" || r.Expected.BytesPerS < 5_000 || r.Expected.BinlogBytesPerS != r.Expected.BytesPerS || r.Expected.RowsPerS <= 0 || r.Cores <= 0 {
		t.Errorf("the reservation %+v: want orders' measured bytes/s (20 rows of 1000 bytes in 2 s at least) as its binlog read too, rows/s from the fleet's ratio, and cores", r)
	}

	// Refused before anything is measured or placed: orders again (before, add measured
	// the source for 2 s, said it sent the rate to the judge, then failed), and another id
	// with orders's source and server_id (before, added; the two then ended each other's
	// binlog connection for ever), naming orders.
	writeFile(t, filepath.Join(dir, "orders2.yaml"), "id: orders2\n"+source+subs)
	for file, want := range map[string]string{
		"orders.yaml":  "instance orders already exists",
		"orders2.yaml": "instance orders2: source " + a.Addr + " with server_id 4243 is read by instance orders already",
	} {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), []string{"add", "-zk", zk, "-root", root, "-judge", srv.URL, "-f", filepath.Join(dir, file), "-measure", "2s"}, &out, &errOut)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("instance add -f %s: %v, want an error starting %q", file, err, want)
		}
		if said := out.String() + errOut.String(); said != "" {
			t.Errorf("instance add -f %s, refused, said:\n%s\nwant nothing but the error (nothing measured, nothing placed)", file, said)
		}
	}

	// A source it cannot measure (its password file is missing): said, and added anyway.
	writeFile(t, filepath.Join(dir, "users.yaml"), strings.NewReplacer(
		"password_env: BINLAKE_TEST_SOURCE_PASSWORD", "password_file: "+filepath.Join(dir, "missing"),
		"server_id: 4243", "server_id: 4253").Replace("id: users\n"+source+subs))
	out = add(filepath.Join(dir, "users.yaml"))
	for _, want := range []string{"source binlog of " + a.Addr + " not measured (source password missing: source.password_file: read secret: open ", "the judge weighs a typical instance instead",
		"instance users added, assigned to wave-", "(typical: no hint: the median rows/s, bytes/s and binlog bytes read/s of the 3 instances the waves run)"} {
		if !strings.Contains(out, want) {
			t.Errorf("instance add said:\n%s\nwant %q in it", out, want)
		}
	}
}

func getURL(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// measuredRate is instance add's report of the source's binlog rate.
var measuredRate = regexp.MustCompile(`source binlog of \S+: ([0-9.]+) (B|KB|MB|GB)/s over 2\.`)
