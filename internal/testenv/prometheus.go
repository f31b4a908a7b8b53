package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Debian's Prometheus tools, unpacked by deploy/testenv/prometheus.sh: the variables name
// the binaries.
var (
	Promtool       = Service{"promtool (Debian's prometheus 2.42)", "BINLAKE_PROMTOOL"}
	PrometheusTool = Service{"Prometheus (Debian's prometheus 2.42)", "BINLAKE_TEST_PROMETHEUS"}
	NodeExporter   = Service{"node_exporter (Debian's prometheus-node-exporter 1.5)", "BINLAKE_TEST_NODE_EXPORTER"}
	Alertmanager   = Service{"Alertmanager (Debian's prometheus-alertmanager 0.25)", "BINLAKE_TEST_ALERTMANAGER"}
)

// RequireTool returns the path of the executable s names. Like Require it skips the test
// when the variable is unset outside CI and fails it otherwise; a set variable that does
// not name an executable always fails.
func RequireTool(t testing.TB, s Service) string {
	t.Helper()
	v := lookup(t, s)
	if fi, err := os.Stat(v); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s: %s=%s is not an executable (run `make services-up`)", s.Name, s.Env, v)
	}
	return v
}

// StartNodeExporter starts Debian's node_exporter on a free port and returns its
// host:port; it is stopped when the test ends.
func StartNodeExporter(t *testing.T) string {
	t.Helper()
	bin := RequireTool(t, NodeExporter)
	addr := FreeAddr(t)
	dir := t.TempDir()
	// Debian builds it with the systemd and textfile collectors on: neither has
	// anything to read in a test.
	startTool(t, "node_exporter", dir, "http://"+addr+"/metrics", bin, "--web.listen-address="+addr,
		"--no-collector.systemd", "--collector.textfile.directory="+dir)
	return addr
}

// StartAlertmanager starts Debian's Alertmanager on addr (FreeAddr), alone (no cluster),
// routing every alert to a webhook receiver at receiverURL at once (group_wait 0s,
// send_resolved), and returns its base URL. It is stopped when the test ends; stop, to
// stop it sooner (then it may be started again on the same address).
func StartAlertmanager(t *testing.T, addr, receiverURL string) (base string, stop func()) {
	t.Helper()
	return StartAlertmanagerUnder(t, addr, "", receiverURL)
}

// StartAlertmanagerUnder is StartAlertmanager serving under the path prefix (its
// --web.route-prefix, as behind a reverse proxy: "/alertmanager"); base ends in it.
func StartAlertmanagerUnder(t *testing.T, addr, prefix, receiverURL string) (base string, stop func()) {
	t.Helper()
	bin := RequireTool(t, Alertmanager)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`route:
  receiver: rec
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: rec
    webhook_configs:
      - url: %q
        send_resolved: true
`, receiverURL)
	path := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	base = "http://" + addr + prefix
	argv := []string{bin, "--config.file=" + path, "--storage.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--cluster.listen-address="}
	if prefix != "" {
		argv = append(argv, "--web.route-prefix="+prefix)
	}
	stop = startTool(t, "alertmanager", dir, base+"/-/ready", argv...)
	return base, stop
}

// FreeAddr returns a loopback host:port nothing listens on now.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startTool starts argv in dir, logging to dir/<name>.log, and waits until ready
// answers 200. It is interrupted (then killed) when the test ends, or when stop is
// called, and its log shown when the test failed.
func startTool(t *testing.T, name, dir, ready string, argv ...string) (stop func()) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", name, b)
		}
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		select {
		case <-done:
			c.Errorf("%s exited (its log follows)", name)
			return
		default:
		}
		resp, err := http.Get(ready)
		if !assert.NoError(c, err) {
			return
		}
		resp.Body.Close()
		assert.Equal(c, http.StatusOK, resp.StatusCode)
	}, 30*time.Second, 100*time.Millisecond, "%s ready at %s", name, ready)
	return stop
}

// Prometheus is a running Prometheus server of a test.
type Prometheus struct {
	URL string // http://127.0.0.1:port
}

// StartPrometheus starts Debian's Prometheus on a free port with config (a prometheus.yml)
// written into a folder of its own along with files (name → content, e.g. the rules the
// config's rule_files name). It is stopped when the test ends; its log is shown when the
// test failed.
func StartPrometheus(t *testing.T, config string, files map[string]string) *Prometheus {
	t.Helper()
	bin := RequireTool(t, PrometheusTool)
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	startTool(t, "prometheus", dir, "http://"+addr+"/-/ready", bin, "--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	return &Prometheus{URL: "http://" + addr}
}

// Target is one scrape target as GET /api/v1/targets shows it.
type Target struct {
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
	Labels    map[string]string `json:"labels"`
}

// Targets returns the active scrape targets.
func (p *Prometheus) Targets() ([]Target, error) {
	var r struct {
		Data struct {
			Active []Target `json:"activeTargets"`
		} `json:"data"`
	}
	err := p.get("/api/v1/targets?state=active", &r)
	return r.Data.Active, err
}

// Rule is one recording or alerting rule as GET /api/v1/rules shows it.
type Rule struct {
	Name           string    `json:"name"`
	Type           string    `json:"type"` // alerting or recording
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// Rules returns every rule of every loaded group.
func (p *Prometheus) Rules() ([]Rule, error) {
	var r struct {
		Data struct {
			Groups []struct {
				Rules []Rule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/rules", &r); err != nil {
		return nil, err
	}
	var out []Rule
	for _, g := range r.Data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// Alert is one pending or firing alert as GET /api/v1/alerts shows it.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// Alerts returns the pending and firing alerts.
func (p *Prometheus) Alerts() ([]Alert, error) {
	var r struct {
		Data struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	err := p.get("/api/v1/alerts", &r)
	return r.Data.Alerts, err
}

// WaitTargetsUp waits until every active target is up with no scrape error and their
// scrape URLs are exactly want (in any order), failing with the last state.
func (p *Prometheus) WaitTargetsUp(t *testing.T, want []string, d time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ts, err := p.Targets()
		if !assert.NoError(c, err) {
			return
		}
		var got []string
		for _, tg := range ts {
			got = append(got, tg.ScrapeURL)
			assert.Equal(c, "up", tg.Health, "%s: scrape error %q", tg.ScrapeURL, tg.LastError)
		}
		assert.ElementsMatch(c, want, got, "the scrape URLs")
	}, d, 200*time.Millisecond, "every Prometheus target up, with no scrape error")
}

// WaitRulesEvaluated waits until every loaded rule has been evaluated at least once, with
// none in error, and returns them (failing with the last state).
func (p *Prometheus) WaitRulesEvaluated(t *testing.T, d time.Duration) []Rule {
	t.Helper()
	var rules []Rule
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		rules, err = p.Rules()
		if !assert.NoError(c, err) || !assert.NotEmpty(c, rules, "no rules loaded") {
			return
		}
		for _, r := range rules {
			assert.Equal(c, "ok", r.Health, "rule %s: error %q", r.Name, r.LastError)
			assert.False(c, r.LastEvaluation.Year() < 2000, "rule %s not evaluated yet", r.Name)
		}
	}, d, 200*time.Millisecond, "every Prometheus rule evaluated, none in error")
	return rules
}

func (p *Prometheus) get(path string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// ExamplePrometheus returns deploy/prometheus's example config, read from dir, pointed at
// the roles' addresses (role → host:port; judge, alarm, wave, agent) instead of their
// default ports, with scrapes and rule evaluations every second; and its rule file, for
// StartPrometheus. It fails when the example no longer names a role's default address.
func ExamplePrometheus(t *testing.T, dir string, addrs map[string]string) (config string, files map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "prometheus.example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	config = string(b)
	defaults := map[string]string{"judge": "127.0.0.1:8090", "wave": "127.0.0.1:8091", "alarm": "127.0.0.1:8092", "agent": "127.0.0.1:9108"}
	for role, addr := range addrs {
		old := "'" + defaults[role] + "'"
		if defaults[role] == "" || strings.Count(config, old) != 1 {
			t.Fatalf("prometheus.example.yml: want the %s target %s once", role, old)
		}
		config = strings.Replace(config, old, "'"+addr+"'", 1)
	}
	config = strings.ReplaceAll(config, "_interval: 15s", "_interval: 1s")
	return config, map[string]string{"rules.yml": string(rules)}
}
