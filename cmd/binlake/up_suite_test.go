//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/deploy"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// started is a Run in a goroutine.
type started struct {
	urls   upURLs
	cancel context.CancelFunc
	done   chan error
}

// startUp runs Run on free ports and waits until it serves.
func startUp(t *testing.T, o upOptions) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan upURLs, 1)
	o.JudgeListen, o.AlarmListen, o.WaveListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	if o.AgentInterval == 0 {
		o.AgentInterval = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	o.Ready = func(u upURLs) { ready <- u }
	s := &started{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- runSuite(ctx, o) }()
	select {
	case s.urls = <-ready:
	case err := <-s.done:
		cancel()
		t.Fatalf("Run returned before serving: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("Run did not become ready within 30s")
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels Run and returns its result (once; later calls return nil).
func (s *started) stop(t *testing.T) error {
	t.Helper()
	if s.done == nil {
		return nil
	}
	s.cancel()
	defer func() { s.done = nil }()
	select {
	case err := <-s.done:
		return err
	case <-time.After(45 * time.Second):
		t.Fatal("Run did not return within 45s of cancel")
		return nil
	}
}

func getJSON(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, data)
		}
	}
	return resp.StatusCode
}

type nodesAnswer struct {
	Nodes []struct {
		Node    string             `json:"node"`
		Live    bool               `json:"live"`
		Batches int64              `json:"batches_this_hour"`
		Load    map[string]float64 `json:"load"`
	} `json:"nodes"`
}

// waitNode polls GET /v1/nodes until node has sent a few batches with host points.
func waitNode(t *testing.T, judgeURL, node string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got nodesAnswer
		getJSON(t, "GET", judgeURL+"/v1/nodes", "", &got)
		for _, n := range got.Nodes {
			if n.Node == node && n.Live && n.Batches >= 2 {
				if _, ok := n.Load["mem.used_pct"]; !ok {
					t.Fatalf("node %s has no mem.used_pct: %v", node, n.Load)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s did not report 2 batches within 30s: %+v", node, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRunServesPlacementAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	s := startUp(t, upOptions{DataDir: dir, Node: "node-a"})
	waitNode(t, s.urls.Judge, "node-a")

	var place struct{ Node string }
	if code := getJSON(t, "POST", s.urls.Judge+"/v1/placement", `{"instance":"orders"}`, &place); code != 200 || place.Node != "node-a" {
		t.Fatalf("placement = %d %+v, want node-a", code, place)
	}
	var alerts any
	if code := getJSON(t, "GET", s.urls.Alarm+"/v1/alerts", "", &alerts); code != 200 {
		t.Fatalf("alarm /v1/alerts = %d", code)
	}
	var pols []struct{ Name string }
	var polAnswer struct {
		Policies []struct{ Name string } `json:"policies"`
	}
	if code := getJSON(t, "GET", s.urls.Alarm+"/v1/policies", "", &polAnswer); code != 200 {
		t.Fatalf("alarm /v1/policies = %d", code)
	}
	pols = polAnswer.Policies
	if len(pols) == 0 {
		t.Fatal("the alarm runs no policy")
	}
	if s.urls.Wave != "" || s.urls.Agent != "" {
		t.Fatalf("without MySQL or agent metrics: urls = %+v", s.urls)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The judge drained into the store before stopping, and released it.
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(dir, StoreFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nodes, err := st.Nodes(context.Background(), time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0] != "node-a" {
		t.Fatalf("stored nodes = %v, want [node-a]", nodes)
	}
}

func TestSecondRunOnTheSameDataFolderFails(t *testing.T) {
	dir := t.TempDir()
	startUp(t, upOptions{DataDir: dir, Node: "n1"})
	err := runSuite(context.Background(), upOptions{DataDir: dir, Node: "n2", JudgeListen: "127.0.0.1:0",
		AlarmListen: "127.0.0.1:0", Logger: quietLogger()})
	if !errors.Is(err, ErrDataDirBusy) {
		t.Fatalf("second Run: %v, want ErrDataDirBusy", err)
	}
	for _, want := range []string{dir, fmt.Sprintf("pid %d", os.Getpid()), "--data"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestRunReportsABusyPortAndReleasesTheFolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- runSuite(context.Background(), upOptions{DataDir: dir, Node: "n", JudgeListen: "127.0.0.1:0",
			AlarmListen: ln.Addr().String(), Logger: quietLogger()})
	}()
	select {
	case err = <-done:
	case <-time.After(45 * time.Second):
		t.Fatal("Run did not return after its alarm failed to listen")
	}
	if err == nil || !strings.Contains(err.Error(), "alarm") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Run: %v, want an error naming the alarm and %s", err, ln.Addr())
	}
	// Everything was closed: the folder can be used again.
	s := startUp(t, upOptions{DataDir: dir, Node: "n"})
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestParseDSN(t *testing.T) {
	tests := []struct {
		name, dsn           string
		addr, user, pw, err string
	}{
		{name: "driver form", dsn: "root:pw@tcp(127.0.0.1:3307)/", addr: "127.0.0.1:3307", user: "root", pw: "pw"},
		{name: "no slash", dsn: "repl@tcp(db:3306)", addr: "db:3306", user: "repl"},
		{name: "plain", dsn: "repl:s3@cret@db.example:3306", addr: "db.example:3306", user: "repl", pw: "s3@cret"},
		{name: "ipv6", dsn: "u@tcp([::1]:3306)/", addr: "[::1]:3306", user: "u"},
		{name: "no user", dsn: "tcp(127.0.0.1:3306)/", err: "no user"},
		{name: "empty user", dsn: ":pw@tcp(h:1)/", err: "empty user"},
		{name: "database", dsn: "u:hunter2@tcp(h:3306)/shop", err: "nothing may follow"},
		{name: "unix socket", dsn: "u:hunter2@unix(/run/mysqld.sock)/", err: "only tcp"},
		{name: "unclosed", dsn: "u:hunter2@tcp(h:3306", err: "unclosed"},
		{name: "no port", dsn: "u:hunter2@tcp(h)/", err: "want host:port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseDSN(tc.dsn)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Addr != tc.addr || m.User != tc.user || m.Password.Reveal() != tc.pw {
				t.Fatalf("got %s %s %q", m.Addr, m.User, m.Password.Reveal())
			}
			if strings.Contains(m.String(), "pw") && tc.pw != "" {
				t.Fatalf("String shows the password: %s", m)
			}
		})
	}
}

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"root:pw@tcp(127.0.0.1:3307)/", "u@h:1", "u:p@tcp(", "@", "u:p@unix(/x)/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseDSN(s)
		if err == nil {
			if m.User == "" || m.Addr == "" {
				t.Fatalf("%q parsed to %+v", s, m)
			}
			if _, _, err := net.SplitHostPort(m.Addr); err != nil {
				t.Fatalf("%q: addr %q: %v", s, m.Addr, err)
			}
		}
	})
}

func TestLoadChannelsAndPolicies(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	chans, err := LoadChannels("", quietLogger())
	if err != nil || len(chans.Notifiers) != 1 || chans.Notifiers[LogChannel] == nil {
		t.Fatalf("default channels = %+v, %v; want log only", chans, err)
	}
	hook := write("channels.yaml", "channels:\n  ops:\n    kind: webhook\n    url: http://127.0.0.1:9/hook?token=hunter2\n")
	chans, err = LoadChannels(hook, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if chans.Notifiers["ops"] == nil || chans.Notifiers[LogChannel] == nil {
		t.Fatalf("channels = %v, want ops and log", chans.Desc)
	}
	if strings.Contains(strings.Join(chans.Desc, " "), "hunter2") {
		t.Fatalf("channel description shows the URL's token: %v", chans.Desc)
	}
	pols, _, err := LoadPolicies("", chans)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pols {
		if strings.Join(p.Channels, ",") != "log,ops" {
			t.Fatalf("built-in policy %s notifies %v, want [log ops]", p.Name, p.Channels)
		}
	}

	for _, tc := range []struct{ name, body, want string }{
		{"unknown key", "channels:\n  ops:\n    kind: log\n    colour: red\n", "colour"},
		{"bad kind", "channels:\n  ops:\n    kind: pager\n", `"pager"`},
		{"no channels", "channels: {}\n", "no channels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadChannels(write(tc.name+".yaml", tc.body), quietLogger())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %s", err, tc.want)
			}
		})
	}

	bad := write("pol.yaml", "policies:\n  - name: x\n    metric: cpu.util\n    condition: \"last > 1\"\n    severity: P3\n    channels: [pager]\n")
	if _, _, err := LoadPolicies(bad, chans); err == nil || !strings.Contains(err.Error(), `"pager"`) {
		t.Fatalf("policy naming an unknown channel: %v", err)
	}
	good := write("pol2.yaml", "policies:\n  - name: x\n    metric: cpu.util\n    condition: \"last > 1\"\n    severity: P3\n    channels: [ops]\n")
	if pols, _, err := LoadPolicies(good, chans); err != nil || len(pols) != 1 {
		t.Fatalf("LoadPolicies = %v, %v", pols, err)
	}
}

func TestDefaultPoliciesParse(t *testing.T) {
	pols, err := DefaultPolicies()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range pols {
		names[p.Name] = true
	}
	for _, want := range []string{"agent-dead", "cpu-high", "memory-high", "disk-high", "replication-lag", "wave-not-running", "cluster-capacity"} {
		if !names[want] {
			t.Errorf("no built-in policy %s", want)
		}
	}
	if !bytes.Contains(deploy.Policies, []byte("channels: [log]")) {
		t.Error("built-in policies name no log channel")
	}
}

func TestInstanceServerIDIsStablePerFolder(t *testing.T) {
	m := MySQL{Addr: "h:3306", User: "u", Flavor: "mysql"}
	a, b, c := m.instance("/d/one"), m.instance("/d/one"), m.instance("/d/two")
	if a.Source.ServerID != b.Source.ServerID || a.Source.ServerID == c.Source.ServerID || a.Source.ServerID < 100000 {
		t.Fatalf("server ids %d %d %d", a.Source.ServerID, b.Source.ServerID, c.Source.ServerID)
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	m.ServerID = 7
	if id := m.instance("/d/one").Source.ServerID; id != 7 {
		t.Fatalf("explicit server id became %d", id)
	}
}

// A batch posted to the suite's judge (a remote agent's HTTP sink) reaches the alarm too:
// a node that posted and then fell silent pages agent-dead, as up's own agent's would.
// (The judge took posted batches alone, and the alarm never heard of the node.)
func TestRunAlertsOnPostedBatches(t *testing.T) {
	s := startUp(t, upOptions{DataDir: t.TempDir(), Node: "node-a"})
	for i := range 2 {
		now := time.Now().UTC().Format(time.RFC3339Nano)
		body := `{"node":"remote","ts":"` + now + `","interval_s":1,"points":[{"name":"cpu.util","value":10}]}`
		resp, err := http.Post(s.urls.Judge+"/v1/metrics", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /v1/metrics %d: %d", i, resp.StatusCode)
		}
		time.Sleep(time.Second)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.urls.Alarm + "/v1/alerts")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `"node":"remote"`) && strings.Contains(string(b), "agent-dead") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no agent-dead alert for the node that posted within 30s: %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRunKeepsPointsForItsRetention: up's judge deletes the stored points older than
// its retention (a data folder of an earlier run held a point of ten days ago), and
// keeps the newer ones; with no retention it keeps all.
func TestRunKeepsPointsForItsRetention(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention time.Duration
		wantOld   bool
	}{
		{"a week", DefaultUpRetention, false},
		{"none", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(dir, StoreFile)})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			err = st.Write(context.Background(), []store.Point{
				{Node: "gone", Name: "cpu.util", TS: now.Add(-10 * 24 * time.Hour), Value: 1},
				{Node: "kept", Name: "cpu.util", TS: now.Add(-6 * 24 * time.Hour), Value: 1}})
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			var logBuf bytes.Buffer
			logs := &syncWriter{w: &logBuf}
			s := startUp(t, upOptions{DataDir: dir, Node: "node-a", Retention: tc.retention, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			waitNode(t, s.urls.Judge, "node-a")
			if tc.retention > 0 { // the retention pass runs beside the start: wait for it
				for deadline := time.Now().Add(30 * time.Second); !logged(logs, &logBuf, "retention: deleted the points"); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("no retention pass logged within 30s")
					}
				}
			}
			if err := s.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			st, err = sqlite.Open(sqlite.Options{Path: filepath.Join(dir, StoreFile)})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			nodes, err := st.Nodes(context.Background(), now.Add(-11*24*time.Hour), now.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"kept", "node-a"}
			if tc.wantOld {
				want = []string{"gone", "kept", "node-a"}
			}
			if !slices.Equal(nodes, want) {
				t.Fatalf("stored nodes = %v, want %v", nodes, want)
			}
		})
	}
}

// logged says whether the log written through w into b holds line.
func logged(w *syncWriter, b *bytes.Buffer, line string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Contains(b.String(), line)
}

// TestUpRetentionFlag: -retention is a week unless given, and a negative one is refused.
func TestUpRetentionFlag(t *testing.T) {
	var help strings.Builder
	if err := runUp(context.Background(), []string{"-h"}, io.Discard, &help); err == nil || !strings.Contains(help.String(), "-retention") ||
		!strings.Contains(help.String(), "(default 168h0m0s)") {
		t.Fatalf("up -h: %v\n%s", err, help.String())
	}
	err := runUp(context.Background(), []string{"-retention", "-1h", "-data", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bad -retention -1h0m0s") {
		t.Fatalf("up -retention -1h: %v", err)
	}
}

// TestShutdownTimeoutRefusesNone: a -shutdown-timeout of 0 or less is refused by up and
// the alarm, naming the flag (it was taken as 30 s while the alarm's start line logged
// the value given).
func TestShutdownTimeoutRefusesNone(t *testing.T) {
	cfg := alarmConfig(t, t.TempDir())
	pol := tempFile(t, "policies.yaml", typoPolicies)
	for _, d := range []string{"0s", "-5s"} {
		err := runUp(context.Background(), []string{"-shutdown-timeout", d, "-data", t.TempDir()}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "bad -shutdown-timeout") {
			t.Errorf("up -shutdown-timeout %s: %v, want it refused", d, err)
		}
		_, _, err = runCmd(t, "alarm", "-config", cfg, "-policies", pol, "-shutdown-timeout", d)
		if err == nil || !strings.Contains(err.Error(), "bad -shutdown-timeout") {
			t.Errorf("alarm -shutdown-timeout %s: %v, want it refused", d, err)
		}
	}
}
