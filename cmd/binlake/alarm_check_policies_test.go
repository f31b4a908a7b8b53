//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAlarmCheckAndStartReportWholePolicyFile: a policy file with a problem of every
// stage (a wrong type, an unknown key, bad values, channels alarm.yaml lacks, in
// different policies and in one) is reported whole by one --check, beside the config's
// own problem; the alarm's start refuses it with the same list, and alarm test -config
// with the policy file's part. An operator trial took three runs to see such a file's
// six problems.
func TestAlarmCheckAndStartReportWholePolicyFile(t *testing.T) {
	t.Chdir(t.TempDir()) // a start that went further would write ./data here
	dir := t.TempDir()
	cfg := tempFile(t, "alarm.yaml", "bus: {kind: none}\ncoordinator: {kind: single, path: "+filepath.Join(dir, "c.json")+"}\n"+
		"channels:\n  ops: {kind: log}\n  hook: {kind: webhook, url_file: "+filepath.Join(dir, "nosuch.url")+"}\n")
	pol := tempFile(t, "policies.yaml", `policies:
  - name: typed
    nodata: 1.5
    severity: P1
    channels: [ops]
  - name: keyed
    nodata: 1
    severity: P1
    chanels: [ops]
  - name: valued
    metric: cpu.util
    condition: avg(#3) => 90
    for: -5m
    severity: P1
    channels: [ops, pager]
  - name: everything
    nodata: [1]
    colour: red
    severity: P1
    channels: [sms]
`)
	policyLines := []string{
		`:3: field "policies[0].nodata": number "1.5" where an integer belongs`,
		`:3: field "policies[0]": policy "typed": what depends on the keys and types above is checked once they are right`,
		`:9: unknown key "policies[1].chanels" (under policies[1]: name, metric, nodes, condition, for, keep_firing_for, nodata, severity, labels, annotations, channels, repeat_interval, max_notifications, group_wait, group_interval, group_by, by)`,
		`:9: field "policies[1]": policy "keyed": what depends on the keys and types above is checked once they are right`,
		`:12: field "policies[2].condition": bad condition "avg(#3) => 90": unknown operator at "=> 90"; want >, >=, <, <=, == or !=`,
		`:13: field "policies[2].for": must not be negative`,
		`:15: policy "valued" names channel "pager", which ` + cfg + ` does not configure`,
		`:17: field "policies[3].nodata": a list where an integer belongs`,
		`:18: unknown key "policies[3].colour" (under policies[3]: name, metric, nodes, condition, for, keep_firing_for, nodata, severity, labels, annotations, channels, repeat_interval, max_notifications, group_wait, group_interval, group_by, by)`,
		`:18: field "policies[3]": policy "everything": what depends on the keys and types above is checked once they are right`,
		`:20: policy "everything" names channel "sms", which ` + cfg + ` does not configure`,
	}
	wantPolicies := pol + strings.Join(policyLines, "\n"+pol)

	var out, errOut bytes.Buffer
	checkErr := run(context.Background(), []string{"alarm", "--check", "--config", cfg, "--policies", pol}, &out, &errOut)
	require.Error(t, checkErr)
	require.Empty(t, out.String())
	// The policy file's problems, then the config's: the webhook's missing URL file.
	polPart, cfgPart, ok := strings.Cut(checkErr.Error(), "\n"+cfg+":5: ")
	require.True(t, ok, "the config's problem follows the policy file's:\n%v", checkErr)
	require.Equal(t, wantPolicies, polPart)
	require.True(t, strings.HasPrefix(cfgPart, `field "channels.hook.url_file": `), cfgPart)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // start must refuse before it waits on anything
	require.EqualError(t, run(ctx, []string{"alarm", "--config", cfg, "--policies", pol}, &out, &errOut), checkErr.Error(), "start")

	_, _, err := runCmd(t, "alarm", "test", "-policies", pol, "-config", cfg, "-stream", filepath.Join(dir, "nosuch.stream"))
	require.EqualError(t, err, wantPolicies, "alarm test -config")
}
