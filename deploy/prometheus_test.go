package deploy

import (
	"os"
	"os/exec"
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
