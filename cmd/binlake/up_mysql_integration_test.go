//go:build !agentonly

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
	"github.com/binlake/binlake/wave/sink"
)

// TestUpMySQLIntegration runs `up` with a MySQL source: the wave captures a table's
// inserts into the rows file, the agent scrapes the wave, and the judge sees the wave's
// figures for the same node. A restart on the same folder resumes without repeating rows.
func TestUpMySQLIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, _ := testenv.ScratchDatabase(t, "up_it")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(20))")

	dir := t.TempDir()
	m := MySQL{Addr: a.Addr, User: a.User, Password: config.Secret(a.Password),
		Subscriptions: []cluster.Subscription{{Name: "t", Topic: "it.rows", Include: []string{db + `\.t`}}}}
	s := startUp(t, upOptions{DataDir: dir, Node: "wave-up", MySQL: &m})
	if s.urls.Wave == "" || s.urls.Rows != filepath.Join(dir, RowsFile) {
		t.Fatalf("urls = %+v", s.urls)
	}
	// The wave starts from the source's current position once it leads: wait for that.
	waitRunning(t, s.urls.Wave)
	exec("INSERT INTO " + db + ".t VALUES (1, 'one'), (2, 'two')")
	waitRows(t, s.urls.Rows, db, 2)

	// The agent scrapes the wave: the judge knows the node leads one instance.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got nodesAnswer
		getJSON(t, "GET", s.urls.Judge+"/v1/nodes", "", &got)
		found := false
		for _, n := range got.Nodes {
			if n.Node == "wave-up" && n.Load["wave.instances"] > 0.99 && n.Load["wave.instances"] < 1.01 { // an EWMA of 1s
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the judge never saw wave.instances = 1 for wave-up: %+v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	// Restart: the unchanged instance keeps its offset, so only the new row is added.
	s = startUp(t, upOptions{DataDir: dir, Node: "wave-up", MySQL: &m})
	exec("INSERT INTO " + db + ".t VALUES (3, 'three')")
	rows := waitRows(t, s.urls.Rows, db, 3)
	if len(rows) != 3 {
		t.Fatalf("after restart: %d rows, want 3 (no repeats): %v", len(rows), rows)
	}
}

// TestUpMySQLSnapshotIntegration: `up -mysql-snapshot` emits the rows a table already
// holds at the first start, then the binlog's.
func TestUpMySQLSnapshotIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, _ := testenv.ScratchDatabase(t, "up_snap")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(20))")
	exec("INSERT INTO " + db + ".t VALUES (1, 'one'), (2, 'two')")
	m := MySQL{Addr: a.Addr, User: a.User, Password: config.Secret(a.Password), Snapshot: true,
		Subscriptions: []cluster.Subscription{{Name: "t", Topic: "it.rows", Include: []string{db + `\.t`}}}}
	s := startUp(t, upOptions{DataDir: t.TempDir(), Node: "wave-up", MySQL: &m})
	waitRows(t, s.urls.Rows, db, 2)
	exec("INSERT INTO " + db + ".t VALUES (3, 'three')")
	rows := waitRows(t, s.urls.Rows, db, 3)
	if got := strings.Join(rows, ","); got != "snapshot:one,snapshot:two,insert:three" {
		t.Fatalf("rows file holds %s, want the two existing rows as snapshot rows, then the insert", got)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
}

func waitRunning(t *testing.T, waveURL string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st struct {
			Instances []wave.InstanceStatus `json:"instances"`
		}
		getJSON(t, "GET", waveURL+"/status", "", &st)
		if len(st.Instances) == 1 && st.Instances[0].State == cluster.StateRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instance is not running after 30s: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitRows reads the rows file until at least want rows of db arrived (inserts or
// snapshot rows), and returns them as "type:v".
func waitRows(t *testing.T, path, db string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var rows []string
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			for sc.Scan() {
				var l sink.Line
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("rows file line %q: %v", sc.Text(), err)
				}
				var msg struct {
					Database, Type string
					Data           map[string]any
				}
				if err := json.Unmarshal(l.Message, &msg); err != nil {
					t.Fatalf("row message %s: %v", l.Message, err)
				}
				if msg.Database == db {
					if l.Topic != "it.rows" || (msg.Type != rowenc.TypeInsert && msg.Type != rowenc.TypeSnapshot) {
						t.Fatalf("row %s on topic %s", l.Message, l.Topic)
					}
					rows = append(rows, msg.Type+":"+fmt.Sprint(msg.Data["v"]))
				}
			}
			f.Close()
		}
		if len(rows) >= want {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows of %s in %s after 30s, want %d: %s", len(rows), db, path, want, strings.Join(rows, ","))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUpRestartsWhileTheSourceRefusesTheLogin: up started again on its data folder while
// the source refuses its user (a password changed) takes the flavor from the folder's
// instance and starts, its wave retrying as a wave does (it asked the server, and the
// refusal stopped up at its start: an outside trial); on a new folder the refusal says
// why up asked and how to start all the same.
func TestUpRestartsWhileTheSourceRefusesTheLogin(t *testing.T) {
	a := testenv.RequireMySQL(t)
	dir := t.TempDir()
	c, err := single.New(single.Options{Path: filepath.Join(dir, CoordFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := defineInstance(context.Background(), c, MySQL{Addr: a.Addr, User: a.User, Flavor: "mariadb"}.instance(dir), "db-host", nil, quietLogger()); err != nil {
		t.Fatal(err)
	}
	wrong := MySQL{Addr: a.Addr, User: a.User, Password: config.Secret("not-" + a.Password + "-the-password")}
	o := &upOptions{MySQL: &wrong, Node: "db-host", Logger: quietLogger(), Rows: filepath.Join(t.TempDir(), "rows.jsonl")}
	_, _, closeRows, err := o.newWave(context.Background(), c, dir)
	if err != nil {
		t.Fatalf("up on its folder, its login refused: %v; want it started, its wave retrying", err)
	}
	closeRows()
	_, err = detectFlavor(context.Background(), wrong)
	if err == nil || !strings.Contains(err.Error(), "Access denied") || !strings.Contains(err.Error(), "check the user and its password") ||
		!strings.Contains(err.Error(), "with -mysql-flavor mysql or mariadb up starts all the same and retries the login") {
		t.Fatalf("a new folder's refused login: %v; want the refusal and the hint", err)
	}
	// A server that does not answer: the hint names the server, and the flag.
	_, err = detectFlavor(context.Background(), MySQL{Addr: "127.0.0.1:1", User: a.User})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "is it running, and reachable from here?") ||
		!strings.Contains(err.Error(), "With -mysql-flavor mysql or mariadb up starts all the same") {
		t.Fatalf("a server that does not answer: %v; want the error and the hint", err)
	}
}

// TestUpMySQLOverTLSIntegration: `up -mysql` with -mysql-tls-ca captures a source whose
// user is refused in the clear (created REQUIRE SSL): the flavor asked at the start, the
// wave's position, binlog and schema reads all go over TLS, and the rows arrive.
func TestUpMySQLOverTLSIntegration(t *testing.T) {
	a, ca := testenv.RequireMySQLTLS(t)
	db, exec, _ := testenv.ScratchDatabase(t, "up_tls")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(20))")
	user := testenv.TLSOnlyUser(t, exec, "up_tls", db)

	dsn := user + ":" + testenv.TLSOnlyPassword + "@tcp(" + a.Addr + ")/"
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"up", "-data", t.TempDir(), "-mysql", dsn, "-mysql-tls-ca", filepath.Join(t.TempDir(), "absent.pem")}, &out, &errOut)
	if err == nil || !strings.HasPrefix(err.Error(), "-mysql-tls-ca: ") || !strings.Contains(err.Error(), "absent.pem") {
		t.Fatalf("an absent CA file: %v, want it named before anything starts", err)
	}
	plain, err := ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := detectFlavor(context.Background(), plain); err == nil || !strings.Contains(err.Error(), "set source.tls") {
		t.Fatalf("in the clear: %v, want the refusal with the hint on TLS", err)
	}
	m := plain
	m.TLS = &config.ClientTLS{CAFile: ca}
	m.Subscriptions = []cluster.Subscription{{Name: "t", Topic: "it.rows", Include: []string{db + `\.t`}}}
	dir := t.TempDir()
	s := startUp(t, upOptions{DataDir: dir, Node: "wave-tls", MySQL: &m})
	waitRunning(t, s.urls.Wave)
	exec("INSERT INTO " + db + ".t VALUES (1, 'over'), (2, 'tls')")
	if rows := waitRows(t, s.urls.Rows, db, 2); len(rows) != 2 {
		t.Fatalf("%d rows over TLS, want 2: %v", len(rows), rows)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"instance", "show", InstanceID, "-data", dir, "-sample", "0"}, &out, &errOut); err != nil {
		t.Fatalf("instance show: %v", err)
	}
	if want := "source    " + user + "@" + a.Addr + " (mariadb, server id "; !strings.Contains(out.String(), want) || !strings.Contains(out.String(), ", TLS with the CA "+ca+")") {
		t.Fatalf("instance show does not say the source is read over TLS with its CA:\n%s", out.String())
	}
}
