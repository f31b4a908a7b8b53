package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseWithReportsEveryStage: one ParseWith returns the problems of every stage,
// the keys and types, the values and the channels the policies name, whether they are
// in different policies or in one, each naming the file, its line and the field or the
// policy, in the file's order. A file like these took an operator three runs to see
// whole when each stage waited for the one before.
func TestParseWithReportsEveryStage(t *testing.T) {
	alarmChannels := &ChannelSet{In: "alarm.yaml", Has: func(c string) bool { return c == "ops" }}
	for _, tc := range []struct {
		name     string
		yaml     string
		channels *ChannelSet
		want     []string // each line of the error begins so, in this order
		absent   []string
		clean    int // policies without a problem of their own, returned beside the error
	}{
		{name: "each stage in its own policy", channels: alarmChannels, yaml: `policies:
  - name: typed
    nodata: [1]
    severity: P1
    channels: [ops]
  - name: keyed
    nodata: 1
    severity: P1
    chanels: [ops]
  - name: valued
    metric: cpu.util
    condition: avg(#3) => 1
    for: -5m
    severity: P1
    channels: [ops]
  - name: routed
    nodata: 1
    severity: P1
    channels: [pager]
`, want: []string{
			`pol.yaml:3: field "policies[0].nodata": a list where an integer belongs`,
			`pol.yaml:3: field "policies[0]": policy "typed": what depends on the keys and types above is checked once they are right`,
			`pol.yaml:9: unknown key "policies[1].chanels" (under policies[1]: name, metric,`,
			`pol.yaml:9: field "policies[1]": policy "keyed": what depends on the keys and types above`,
			`pol.yaml:12: field "policies[2].condition": bad condition "avg(#3) => 1": unknown operator at "=> 1"`,
			`pol.yaml:13: field "policies[2].for": must not be negative`,
			`pol.yaml:19: policy "routed" names channel "pager", which alarm.yaml does not configure`,
		}},
		{name: "every stage in one policy", channels: alarmChannels, yaml: `policies:
  - name: all
    nodata: [1]
    colour: red
    for: -1m
    severity: P9
    channels: [ops, pager, pager]
`, want: []string{
			`pol.yaml:3: field "policies[0].nodata": a list where an integer belongs`,
			`pol.yaml:4: unknown key "policies[0].colour"`,
			`pol.yaml:4: field "policies[0]": policy "all": what depends on the keys and types above is checked once they are right`,
			// The values that decoded are checked beside the keys and types (an outside
			// trial needed two runs); what the wrong ones would decide is not.
			`pol.yaml:5: field "policies[0].for": must not be negative`,
			`pol.yaml:6: field "policies[0].severity": `,
			`pol.yaml:7: field "policies[0].channels": channel "pager" listed twice`,
			`pol.yaml:7: policy "all" names channel "pager", which alarm.yaml does not configure`,
		}, absent: []string{`"policies[0].condition"`, `"policies[0].nodata": nodata`}},
		{name: "values and channels of one policy beside others' types", channels: alarmChannels, yaml: `policies:
  - nodata: 1
    severity: [P1]
    channels: [sms]
  - name: bad
    metric: cpu.util
    condition: last ~ 1
    severity: P1
    repeat_interval: -1h
    channels: [ops, sms]
`, want: []string{
			`pol.yaml:3: field "policies[0].severity": a list where a string belongs`,
			`pol.yaml:3: field "policies[0]": policy policies[0]: what depends on the keys and types above`,
			`pol.yaml:4: policy policies[0] names channel "sms", which alarm.yaml does not configure`,
			`pol.yaml:7: field "policies[1].condition": bad condition "last ~ 1": unknown operator at "~ 1"`,
			`pol.yaml:9: field "policies[1].repeat_interval": must not be negative`,
			`pol.yaml:10: policy "bad" names channel "sms", which alarm.yaml does not configure`,
		}},
		{name: "an unknown top-level key beside the policies' problems", channels: alarmChannels, yaml: `polices: []
policies:
  - name: a
    nodata: -1
    severity: P1
    channels: [ops]
`, want: []string{
			`pol.yaml:1: unknown key "polices" (at the top level: policies)`,
			`pol.yaml:4: field "policies[0].nodata": nodata -1`,
		}},
		{name: "a policy that is not a mapping", channels: alarmChannels, yaml: `policies:
  - cpu-high
  - name: b
    nodata: 1
    severity: P1
    channels: [pager]
`, want: []string{
			`pol.yaml:2: field "policies[0]": string "cpu-high" where a mapping belongs`,
			`pol.yaml:2: field "policies[0]": policy policies[0]: what depends on the keys and types above`,
			`pol.yaml:6: policy "b" names channel "pager", which alarm.yaml does not configure`,
		}},
		{name: "a clean policy beside ones in error", channels: alarmChannels, yaml: `policies:
  - {name: a, nodata: 1, severity: P1, channels: [ops]}
  - {name: a, nodata: 1, severity: P1, channels: [ops]}
  - {name: c, nodata: 1, severity: P1, channels: [sms]}
  - {name: d, nodata: 1, severity: P1, channels: [ops], for: soon}
`, want: []string{
			`pol.yaml:3: field "policies[1].name": duplicate policy name "a" (also policies[0])`,
			`pol.yaml:4: policy "c" names channel "sms", which alarm.yaml does not configure`,
			`pol.yaml:5: field "policies[3].for": invalid duration "soon"`,
			`pol.yaml:5: field "policies[3]": policy "d": what depends on the keys and types above`,
		}, clean: 1},
		{name: "without channels to check against", yaml: `policies:
  - name: a
    nodata: [1]
    severity: P1
    channels: [pager]
  - name: b
    nodata: 1
    severity: P7
    channels: [pager]
`, want: []string{
			`pol.yaml:3: field "policies[0].nodata": a list where an integer belongs`,
			`pol.yaml:3: field "policies[0]": policy "a": what depends on the keys and types above`,
			`pol.yaml:8: field "policies[1].severity": severity "P7": want P0 (most severe) to P5`,
		}, absent: []string{"pager"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pols, err := ParseWith(strings.NewReader(tc.yaml), "pol.yaml", tc.channels)
			require.Error(t, err)
			require.Len(t, pols, tc.clean, "the policies without a problem of their own come back beside the error")
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), err.Error())
			for i, w := range tc.want {
				require.True(t, strings.HasPrefix(lines[i], w), "line %d is\n%s\nwant it to begin\n%s", i, lines[i], w)
			}
			for _, a := range tc.absent {
				require.NotContains(t, err.Error(), a)
			}
			// The same file again: the same list, in the same order.
			_, again := ParseWith(strings.NewReader(tc.yaml), "pol.yaml", tc.channels)
			require.EqualError(t, again, err.Error())
		})
	}
}

// TestParseWithChannelsAccepts: a file whose policies name only configured channels
// loads, each policy with its first line and its metric's.
func TestParseWithChannelsAccepts(t *testing.T) {
	pols, err := ParseWith(strings.NewReader("policies:\n  - name: a\n    nodata: 1\n    severity: P1\n    channels: [ops]\n  - name: b\n    severity: P2\n    condition: last > 1\n    metric: cpu.util\n    channels: [ops]\n"),
		"pol.yaml", &ChannelSet{In: "alarm.yaml", Has: func(c string) bool { return c == "ops" }})
	require.NoError(t, err)
	require.Len(t, pols, 2)
	require.Equal(t, []int{2, 2}, []int{pols[0].Line, pols[0].MetricLine})
	require.Equal(t, []int{6, 9}, []int{pols[1].Line, pols[1].MetricLine})
}
