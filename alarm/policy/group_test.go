package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGroup: which alerts of a policy share a notification, its key and its group labels,
// for each kind of group_by.
func TestGroup(t *testing.T) {
	ps, err := Parse(strings.NewReader(`policies:
  - name: lag
    metric: wave.lag_s
    condition: last > 60
    severity: P1
    channels: [c]
  - name: lag-by-instance
    metric: wave.lag_s
    condition: last > 60
    severity: P2
    channels: [c]
    group_by: [instance, alertname]
    group_wait: 30s
    group_interval: 5m
  - name: each
    metric: wave.lag_s
    condition: last > 60
    severity: P3
    channels: [c]
    group_by: ["..."]
  - name: by-missing
    metric: wave.lag_s
    condition: last > 60
    severity: P3
    channels: [c]
    group_by: [team]
`), "p.yaml")
	require.NoError(t, err)
	alert := func(p *Policy, node, inst string) map[string]string {
		return map[string]string{LabelAlertName: p.Name, LabelSeverity: p.Severity.String(), LabelNode: node,
			LabelMetric: "wave.lag_s", "instance": inst}
	}
	def, byInst, each, missing := ps[0], ps[1], ps[2], ps[3]
	require.Equal(t, DefaultGroupBy, def.GroupBy)
	require.Nil(t, def.GroupInterval)
	require.Equal(t, 5*time.Minute, *byInst.GroupInterval)
	require.Equal(t, []string{GroupAll}, each.GroupBy)

	cases := []struct {
		name   string
		p      *Policy
		labels map[string]string
		key    string
		group  map[string]string
	}{
		{"default: the policy", def, alert(def, "wave-1", "orders"), "lag/P1",
			map[string]string{"alertname": "lag", "severity": "P1"}},
		{"default: another node, the same group", def, alert(def, "wave-2", "users"), "lag/P1",
			map[string]string{"alertname": "lag", "severity": "P1"}},
		{"by instance", byInst, alert(byInst, "wave-1", "orders"), `lag-by-instance/P2:{instance="orders"}`,
			map[string]string{"alertname": "lag-by-instance", "instance": "orders"}},
		{"by instance, another node", byInst, alert(byInst, "wave-2", "orders"), `lag-by-instance/P2:{instance="orders"}`,
			map[string]string{"alertname": "lag-by-instance", "instance": "orders"}},
		{"by instance, another instance", byInst, alert(byInst, "wave-1", "users"), `lag-by-instance/P2:{instance="users"}`,
			map[string]string{"alertname": "lag-by-instance", "instance": "users"}},
		{"by instance, a value that needs quoting", byInst, alert(byInst, "wave-1", `a"b`), `lag-by-instance/P2:{instance="a\"b"}`,
			map[string]string{"alertname": "lag-by-instance", "instance": `a"b`}},
		{"every label", each, alert(each, "wave-1", "orders"),
			`each/P3:{instance="orders", metric="wave.lag_s", node="wave-1"}`, alert(each, "wave-1", "orders")},
		{"a label the alert lacks", missing, alert(missing, "wave-1", "orders"), "by-missing/P3", map[string]string{}},
		{"a label the alert has empty: the same group", missing, func() map[string]string {
			l := alert(missing, "wave-2", "users")
			l["team"] = ""
			return l
		}(), "by-missing/P3", map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, labels := tc.p.Group(tc.labels)
			require.Equal(t, tc.key, key)
			require.Equal(t, tc.group, labels)
		})
	}
	// The group labels are the group's own: changing them leaves the alert's alone.
	l := alert(each, "wave-1", "orders")
	_, g := each.Group(l)
	g["node"] = "x"
	require.Equal(t, "wave-1", l["node"])
}
