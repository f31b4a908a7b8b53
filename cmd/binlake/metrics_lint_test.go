//go:build !agentonly

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestMetricsLintIntegration runs every role (judge, alarm, wave on a real MySQL source,
// agent with its own /metrics) in one `up`, lets a row and a few agent batches flow so
// the labelled series exist, then scrapes each role's /metrics over HTTP and lints it
// with promlint: the rules of `promtool check metrics`. When a promtool binary is on the
// PATH (or named by BINLAKE_PROMTOOL), the scrape must also pass `promtool check metrics`.
func TestMetricsLintIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, execSQL, _ := testenv.ScratchDatabase(t, "metrics_lint")
	execSQL("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(20))")

	dir := t.TempDir()
	m := MySQL{Addr: a.Addr, User: a.User, Password: config.Secret(a.Password),
		Subscriptions: []cluster.Subscription{{Name: "t", Topic: "it.rows", Include: []string{db + `\.t`}}}}
	s := startUp(t, upOptions{DataDir: dir, Node: "lint-node", MySQL: &m, AgentMetrics: "127.0.0.1:0"})
	if s.urls.Wave == "" || s.urls.Agent == "" {
		t.Fatalf("urls = %+v, want a wave and the agent's /metrics", s.urls)
	}
	waitRunning(t, s.urls.Wave)
	execSQL("INSERT INTO " + db + ".t VALUES (1, 'one')")
	waitRows(t, s.urls.Rows, db, 1)
	waitNode(t, s.urls.Judge, "lint-node") // the agent delivered: the judge and alarm saw points

	promtool := os.Getenv("BINLAKE_PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		t.Log("no promtool on the PATH (or BINLAKE_PROMTOOL): linting with promlint only")
	}

	for _, role := range []struct {
		name, url string
		want      []string // families the scrape must hold, so an empty page cannot pass
	}{
		{"judge", s.urls.Judge + "/metrics", []string{"binlake_judge_points_total", "binlake_judge_store_points_written_total", "process_cpu_seconds_total"}},
		{"alarm", s.urls.Alarm + "/metrics", []string{"binlake_alarm_points_total", "binlake_alarm_alerts"}},
		{"wave", s.urls.Wave + "/metrics", []string{"binlake_wave_rows_published_total", "binlake_wave_lag_seconds", "process_cpu_seconds_total"}},
		{"agent", s.urls.Agent, []string{"binlake_agent_batches_delivered_total", "binlake_agent_collector_errors_total"}},
	} {
		t.Run(role.name, func(t *testing.T) {
			body := scrape(t, role.url)
			for _, w := range role.want {
				if !bytes.Contains(body, []byte("# TYPE "+w+" ")) {
					t.Errorf("%s /metrics lacks %s", role.name, w)
				}
			}
			problems, err := promlint.New(bytes.NewReader(body)).Lint()
			if err != nil {
				t.Fatalf("lint %s: %v", role.url, err)
			}
			for _, p := range problems {
				t.Errorf("%s: %s: %s", role.name, p.Metric, p.Text)
			}
			if promtool != "" {
				cmd := exec.Command(promtool, "check", "metrics")
				cmd.Stdin = bytes.NewReader(body)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("promtool check metrics on %s: %v\n%s", role.name, err, out)
				}
			}
		})
	}

	// The same up, scraped by a real Prometheus (Debian's 2.42) with deploy/prometheus's
	// example config and rules: every role up with no scrape error, every rule evaluated
	// with none in error, and a healthy suite raises no alert.
	t.Run("prometheus", func(t *testing.T) {
		addrs := map[string]string{}
		var want []string
		for role, u := range map[string]string{"judge": s.urls.Judge, "alarm": s.urls.Alarm, "wave": s.urls.Wave, "agent": s.urls.Agent} {
			pu, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			addrs[role] = pu.Host
			want = append(want, "http://"+pu.Host+"/metrics")
		}
		config, files := testenv.ExamplePrometheus(t, "../../deploy/prometheus", addrs)
		prom := testenv.StartPrometheus(t, config, files)
		prom.WaitTargetsUp(t, want, 30*time.Second)
		rules := prom.WaitRulesEvaluated(t, 30*time.Second)
		alerts, err := prom.Alerts()
		if err != nil {
			t.Fatal(err)
		}
		if len(alerts) != 0 {
			t.Errorf("a healthy up raises alerts: %+v", alerts)
		}
		t.Logf("Prometheus scrapes %d roles of up with no error; %d rules evaluated, none in error, no alert", len(want), len(rules))
	})
}

// scrape GETs a /metrics page in the text format promtool reads.
func scrape(t *testing.T, url string) []byte {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s = %d %s:\n%s", url, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return body
}
