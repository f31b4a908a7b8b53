package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/config"
)

const good = `policies:
  - name: high-cpu
    metric: cpu.util
    nodes:
      regex: "wave-.*"
    condition: "avg(#3) > 90"
    for: 1m
    keep_firing_for: 2m
    severity: P1
    labels: {team: dba}
    annotations:
      summary: "CPU on {{ .Node }} is {{ printf \"%.1f\" .Value }}% ({{ .Labels.team }})"
    channels: [ops]
    repeat_interval: 30m
    max_notifications: 3
    group_wait: 5s
  - name: lag
    metric: wave.lag_s
    nodes:
      names: [wave-1, wave-2]
      labels: {instance: orders}
    condition: "all(#2) >= 60"
    severity: p0
    channels: [ops, mail]
  - name: agent-dead
    nodata: 3
    severity: P0
    channels: [ops]
`

func TestParse(t *testing.T) {
	ps, err := Parse(strings.NewReader(good), "policies.yaml")
	require.NoError(t, err)
	require.Len(t, ps, 3)
	p := ps[0]
	require.Equal(t, "high-cpu", p.Name)
	require.Equal(t, 2, p.Line)
	require.Equal(t, time.Minute, p.For)
	require.Equal(t, 2*time.Minute, p.KeepFiringFor)
	require.Equal(t, Severity(1), p.Severity)
	require.Equal(t, 30*time.Minute, p.RepeatInterval)
	require.Equal(t, 3, p.MaxNotifications)
	require.Equal(t, 5*time.Second, *p.GroupWait)
	require.True(t, p.MatchNode("wave-12"))
	require.False(t, p.MatchNode("xwave-1"), "the regex is anchored")
	require.Equal(t, map[string]string{"summary": "CPU on wave-3 is 93.3% (dba)"},
		p.Render(TemplateData{Node: "wave-3", Value: 93.33, Labels: map[string]string{"team": "dba"}}))

	l := ps[1]
	require.Equal(t, Severity(0), l.Severity)
	require.Equal(t, DefaultRepeatInterval, l.RepeatInterval)
	require.Nil(t, l.GroupWait)
	require.True(t, l.MatchNode("wave-2"))
	require.False(t, l.MatchNode("wave-3"))
	require.True(t, l.MatchLabels(map[string]string{"instance": "orders", "x": "y"}))
	require.False(t, l.MatchLabels(map[string]string{"instance": "users"}))
	require.False(t, l.MatchLabels(nil))
	l.Labels = map[string]string{"instance": AnyValue}
	require.True(t, l.MatchLabels(map[string]string{"instance": "users"}))
	require.False(t, l.MatchLabels(nil), "the unlabelled summary series is not selected by *")
	l.Labels = map[string]string{"cpu": ""}
	require.True(t, l.MatchLabels(nil), `cpu: "" selects the series without the label`)
	require.True(t, l.MatchLabels(map[string]string{"x": "y"}))
	require.False(t, l.MatchLabels(map[string]string{"cpu": "0"}), `cpu: "" leaves each core's series out`)

	d := ps[2]
	require.Nil(t, d.Cond)
	require.Equal(t, 3, d.NoData)
	require.True(t, d.MatchNode("anything"))
}

// TestParseErrors: every bad file names the file, the line and the field.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"unknown key", "policies:\n  - name: a\n    metric: cpu.util\n    conditon: last > 1\n", 4, "policies[0].conditon", "unknown key"},
		{"bad condition", "policies:\n  - name: a\n    metric: cpu.util\n    condition: avg(#3) =< 1\n    severity: P1\n    channels: [x]\n", 4, "policies[0].condition", "unknown operator"},
		{"bad severity", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    severity: P9\n    channels: [x]\n", 5, "policies[0].severity", "P0"},
		{"missing severity", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    channels: [x]\n", 2, "policies[0].severity", "missing"},
		{"bad regex", "policies:\n  - name: ok\n    nodata: 1\n    severity: P1\n    channels: [x]\n  - name: b\n    metric: cpu.util\n    nodes:\n      regex: \"wave-(\"\n    condition: last > 1\n    severity: P1\n    channels: [x]\n", 9, "policies[1].nodes.regex", "regular expression"},
		{"bad duration", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    for: 10\n", 5, "policies[0].for", "invalid duration"},
		{"bad template", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    severity: P1\n    channels: [x]\n    annotations:\n      summary: \"{{ .Nope }}\"\n", 8, "policies[0].annotations.summary", "bad template"},
		{"printf verb unfit for its value", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    severity: P1\n    channels: [x]\n    annotations:\n      summary: '{{ printf \"%d\" .Value }}'\n", 8, "policies[0].annotations.summary", "a printf verb does not fit its value (%!d(float64=95.5))"},
		{"reserved label", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    severity: P1\n    channels: [x]\n    labels:\n      node: x\n", 8, "policies[0].labels.node", "cannot be overridden"},
		{"no channels", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    severity: P1\n", 2, "policies[0].channels", "no channels"},
		{"neither condition nor nodata", "policies:\n  - name: a\n    metric: cpu.util\n    severity: P1\n    channels: [x]\n", 2, "policies[0].condition", "condition"},
		{"condition without metric", "policies:\n  - name: a\n    condition: last > 1\n    severity: P1\n    channels: [x]\n", 2, "policies[0].metric", "needs a metric"},
		{"bad metric", "policies:\n  - name: a\n    metric: CPU\n    condition: last > 1\n    severity: P1\n    channels: [x]\n", 3, "policies[0].metric", "not a metric name"},
		{"duplicate name", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n  - name: a\n    nodata: 2\n    severity: P1\n    channels: [x]\n", 6, "policies[1].name", "duplicate"},
		{"negative nodata", "policies:\n  - name: a\n    nodata: -1\n    severity: P1\n    channels: [x]\n", 3, "policies[0].nodata", "nodata"},
		{"wrong type", "policies:\n  - name: a\n    nodata: [1]\n", 3, "policies[0].nodata", "a list where an integer belongs"},
		{"empty list", "policies: []\n", 0, "policies", "no policies"},
		{"empty group_by", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n    group_by: []\n", 6, "policies[0].group_by", "leave group_by out"},
		{"... with other labels", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n    group_by: [node, \"...\"]\n", 6, "policies[0].group_by", "only entry"},
		{"bad group_by label", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n    group_by: [node, in-stance]\n", 6, "policies[0].group_by", `label name "in-stance"`},
		{"group_by label twice", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n    group_by: [node, node]\n", 6, "policies[0].group_by", `label "node" listed twice`},
		{"by on nodata", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n    by: [instance]\n", 6, "policies[0].by", "only for a policy with a condition"},
		{"bad by label", "policies:\n  - name: a\n    metric: m\n    condition: last > 1\n    severity: P1\n    channels: [x]\n    by: [in-stance]\n", 7, "policies[0].by", `label name "in-stance"`},
		{"by the alarm's label", "policies:\n  - name: a\n    metric: m\n    condition: last > 1\n    severity: P1\n    channels: [x]\n    by: [instance, node]\n", 7, "policies[0].by", `label "node" is the alarm's`},
		{"by label twice", "policies:\n  - name: a\n    metric: m\n    condition: last > 1\n    severity: P1\n    channels: [x]\n    by: [instance, instance]\n", 7, "policies[0].by", `label "instance" listed twice`},
		{"repeat every nanosecond", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n    repeat_interval: 1ns\n", 6, "policies[0].repeat_interval", "want at least 10s"},
		{"channel twice", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x, x]\n", 5, "policies[0].channels", `channel "x" listed twice`},
		{"negative group_interval", "policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n    group_interval: -1s\n", 6, "policies[0].group_interval", "negative"},
		{"bad lookup", "policies:\n  - name: a\n    metric: cpu.util\n    condition: lookup(#5,3) > 1\n    severity: P1\n    channels: [x]\n", 4, "policies[0].condition", "5 of the last 3 points can never match"},
		{"names and regex", "policies:\n  - name: a\n    metric: cpu.util\n    nodes:\n      names: [wave-1]\n      regex: \"db-.*\"\n    condition: last > 1\n    severity: P1\n    channels: [x]\n", 6, "policies[0].nodes.regex", "not both"},
		{"for a century", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    for: 1000000h\n    severity: P1\n    channels: [x]\n", 5, "policies[0].for", "want at most 720h0m0s"},
		{"keep firing a century", "policies:\n  - name: a\n    metric: cpu.util\n    condition: last > 1\n    keep_firing_for: 1000000h\n    severity: P1\n    channels: [x]\n", 5, "policies[0].keep_firing_for", "want at most 720h0m0s"},
		{"bad stddev", "policies:\n  - name: a\n    metric: cpu.util\n    condition: stddev(#10) > 3\n    severity: P1\n    channels: [x]\n", 4, "policies[0].condition", `stddev takes "= k"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml), "pol.yaml")
			require.Error(t, err)
			var ce *config.Error
			require.True(t, errors.As(err, &ce), "want a *config.Error, got %T: %v", err, err)
			require.Equal(t, "pol.yaml", ce.File)
			require.Equal(t, tc.line, ce.Line, err.Error())
			require.Contains(t, err.Error(), `"`+tc.field+`"`, "the error names the field")
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestParseReportsEveryProblem: every problem of every policy in one error, in the
// file's order, each at its line; an operator fixing a file sees them all in one run.
func TestParseReportsEveryProblem(t *testing.T) {
	yaml := `policies:
  - name: a
    metric: cpu.util
    condition: avg(#3) >> 1
    severity: P9
    channels: [x]
  - name: b
    metric: cpu.util
    condition: lookup(#4,3) > 1
    severity: P1
    labels: {node: n, Bad-Label: x}
    channels: [y, y]
  - name: a
    nodata: 1
    severity: P2
    channels: [x]
  - name: fine
    nodata: 2
    severity: P3
    channels: [x]
`
	_, err := Parse(strings.NewReader(yaml), "pol.yaml")
	require.Error(t, err)
	want := []string{
		`pol.yaml:4: field "policies[0].condition"`,
		`pol.yaml:5: field "policies[0].severity"`,
		`pol.yaml:9: field "policies[1].condition": bad condition "lookup(#4,3) > 1": 4 of the last 3 points can never match`,
		`pol.yaml:11: field "policies[1].labels.Bad-Label"`,
		`pol.yaml:11: field "policies[1].labels.node": label "node" is set by the alarm`,
		`pol.yaml:12: field "policies[1].channels": channel "y" listed twice`,
		`pol.yaml:13: field "policies[2].name": duplicate policy name "a" (also policies[0])`,
	}
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, len(want), err.Error())
	for i, w := range want {
		require.Contains(t, lines[i], w)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("/nonexistent/policies.yaml")
	require.ErrorContains(t, err, "/nonexistent/policies.yaml")
}

func FuzzParse(f *testing.F) {
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add("policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [x]\n")
	f.Add("policies: [{name: a, metric: cpu.util, condition: \"pdiff(#2) > 5\", severity: P5, channels: [c]}]")
	f.Add("policies:\n  - {}\n")
	f.Add("policies: [{name: a, metric: cpu.util, condition: \"lookup(#2,3) > 5\", severity: P1, channels: [c], group_by: [instance], group_interval: 5m}]")
	f.Add("policies: [{name: a, metric: cpu.util, condition: \"stddev(#10) = 3\", severity: P1, channels: [c], group_by: [\"...\"]}]")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := Parse(strings.NewReader(s), "fuzz.yaml")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, p := range ps {
			if len(p.Channels) == 0 || p.Cond == nil && p.NoData == 0 || p.Severity > 5 {
				t.Fatalf("invalid policy accepted: %+v", p)
			}
			if len(p.GroupBy) == 0 || p.GroupInterval != nil && *p.GroupInterval < 0 {
				t.Fatalf("invalid grouping accepted: %v %v", p.GroupBy, p.GroupInterval)
			}
			p.MatchNode("wave-1")
			p.Render(TemplateData{})
			p.Group(map[string]string{"node": "wave-1"})
		}
	})
}
