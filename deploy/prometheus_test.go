package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/binlake/binlake/internal/testenv"
)

// TestPrometheusRules runs Debian's promtool on deploy/prometheus: the example config and
// the rules it loads are valid (check config), every rule test passes (test rules), and
// every alert of rules.yml has a case in rules_test.yml that expects it firing, so an
// alert cannot be added untested.
func TestPrometheusRules(t *testing.T) {
	promtool := testenv.RequireTool(t, testenv.Promtool)
	for _, args := range [][]string{
		{"check", "config", "prometheus.example.yml"}, // checks rules.yml too, through rule_files
		{"check", "rules", "rules.yml"},
		{"test", "rules", "rules_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	alerts := alertNames(t, "prometheus/rules.yml")
	if len(alerts) == 0 {
		t.Fatal("rules.yml has no alerts")
	}
	fired := firingCases(t, "prometheus/rules_test.yml")
	for _, a := range alerts {
		if !fired[a] {
			t.Errorf("alert %s has no case in rules_test.yml that expects it firing", a)
		}
	}
	for a := range fired {
		if !slices.Contains(alerts, a) {
			t.Errorf("rules_test.yml expects %s, which rules.yml does not define", a)
		}
	}
	// Every alert has a runbook entry in the deploy guide.
	guide, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if !strings.Contains(string(guide), "`"+a+"`") {
			t.Errorf("deploy/README.md has no runbook entry for %s", a)
		}
	}
}

// alertNames returns the alert names of a Prometheus rule file.
func alertNames(t *testing.T, path string) []string {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, path, &f)
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r.Alert)
			}
		}
	}
	return out
}

// firingCases returns the alerts that a promtool rule-test file expects firing somewhere.
func firingCases(t *testing.T, path string) map[string]bool {
	t.Helper()
	var f struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, path, &f)
	out := map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				out[a.Alertname] = true
			}
		}
	}
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestAlertmanagerExample: Debian's amtool takes deploy/prometheus/alertmanager.example.yml,
// and it routes both sources' pages alike (Prometheus's critical, the alarm's P0 and P1)
// and the rest to tickets: one Alertmanager routed severity="critical" and missed the
// alarm's P1 pages (an outside trial). The example scrape config gives every target the
// `node` label its inhibitions match on: the target's host, without its port.
func TestAlertmanagerExample(t *testing.T) {
	amtool := filepath.Join(filepath.Dir(testenv.RequireTool(t, testenv.Alertmanager)), "amtool")
	run := func(args ...string) string {
		cmd := exec.Command(amtool, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("amtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("check-config", "alertmanager.example.yml")
	for labels, want := range map[string]string{
		"alertname=wave-down severity=P1":                     "pager",
		"alertname=agent-dead severity=P0":                    "pager",
		"alertname=BinlakeTargetDown severity=critical":       "pager",
		"alertname=replication-lag severity=P2":               "tickets",
		"alertname=BinlakeJudgeIngestBehind severity=warning": "tickets",
	} {
		if got := run(append([]string{"config", "routes", "test", "--config.file=alertmanager.example.yml"}, strings.Fields(labels)...)...); got != want {
			t.Errorf("%s: routed to %q, want %q", labels, got, want)
		}
	}

	var cfg struct {
		ScrapeConfigs []struct {
			Job     string `yaml:"job_name"`
			Relabel []struct {
				Source []string `yaml:"source_labels"`
				Regex  string   `yaml:"regex"`
				Target string   `yaml:"target_label"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	b, err := os.ReadFile("prometheus/prometheus.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, sc := range cfg.ScrapeConfigs {
		if len(sc.Relabel) != 1 || sc.Relabel[0].Target != "node" || !slices.Equal(sc.Relabel[0].Source, []string{"node", "__address__"}) {
			t.Errorf("job %s: relabel_configs %+v, want the node label from __address__ unless the target has one", sc.Job, sc.Relabel)
			continue
		}
		re := regexp.MustCompile("^(?:" + sc.Relabel[0].Regex + ")$") // Prometheus anchors it
		// Prometheus joins the source labels with ";": the target's node (empty when it
		// has none) and its address.
		for addr, host := range map[string]string{";wave-1:8091": "wave-1", ";10.0.0.5:9108": "10.0.0.5", ";[::1]:8090": "::1", ";judge": "judge"} {
			if m := re.FindStringSubmatch(addr); m == nil || m[1] != host {
				t.Errorf("job %s: node of %s is %q, want %q", sc.Job, addr, m, host)
			}
		}
		// A node set by hand is kept: no match, no replacement (an outside trial's was
		// overwritten with 127.0.0.1).
		if m := re.FindStringSubmatch("myhost;127.0.0.1:8091"); m != nil {
			t.Errorf("job %s: a target's own node label is replaced (%q)", sc.Job, m)
		}
	}
}
