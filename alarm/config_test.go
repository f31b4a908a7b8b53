package alarm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/config"
)

// TestExamples: the shipped examples load, and every channel a policy names exists.
func TestExamples(t *testing.T) {
	cfg, err := Load("../deploy/alarm.example.yaml")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8092", cfg.HTTP.Listen)
	require.True(t, cfg.Inhibit().Enabled)
	pols, err := policy.Load("../deploy/policies.example.yaml")
	require.NoError(t, err)
	require.Len(t, pols, 6)
	for _, p := range pols {
		for _, c := range p.Channels {
			require.Contains(t, cfg.Channels, c, "policy %s", p.Name)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	cases := map[string]string{
		"bus:\n  brokerz: [x]\nchannels: {l: {kind: log}}\n":                       "brokerz",
		"bus: {kind: none}\nchannels: {l: {kind: pager}}\n":                        "channels.l: kind \"pager\"",
		"bus: {kind: none}\n":                                                      "channels",
		"bus: {kind: none}\nchannels: {w: {kind: webhook}}\n":                      "url",
		"bus: {kind: none}\ncoordinator: {kind: zk}\nchannels: {l: {kind: log}}\n": "coordinator.servers",
		"bus: {kind: none}\nnotify: {group_wait: 5}\nchannels: {l: {kind: log}}\n": "invalid duration",
	}
	for yaml, want := range cases {
		p := filepath.Join(t.TempDir(), "alarm.yaml")
		require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
		_, err := Load(p)
		require.ErrorContains(t, err, want, yaml)
		require.True(t, strings.Contains(err.Error(), p), "names the file: %v", err)
	}
	var ce *config.Error
	p := filepath.Join(t.TempDir(), "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  l:\n    kind: log\n    colour: red\n"), 0o600))
	_, err := Load(p)
	require.True(t, errors.As(err, &ce))
	require.Equal(t, 5, ce.Line)
}

func TestChannelSecretsStayHidden(t *testing.T) {
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "url")
	require.NoError(t, os.WriteFile(urlFile, []byte("https://oapi.dingtalk.com/robot/send?access_token=TOPSECRET\n"), 0o600))
	p := filepath.Join(dir, "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  d: {kind: dingtalk, url_file: "+urlFile+"}\n"), 0o600))
	cfg, err := Load(p)
	require.NoError(t, err)
	chans, desc, err := cfg.BuildChannels(quiet)
	require.NoError(t, err)
	require.Contains(t, chans, "d")
	require.Equal(t, []string{"d=dingtalk"}, desc)
	require.NotContains(t, strings.Join(desc, " "), "TOPSECRET")
}
