package alarm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigOldKeys: every key alarm.yaml no longer takes is refused at its line with
// what replaced it, not as an unknown key.
func TestConfigOldKeys(t *testing.T) {
	const mail = "bus: {kind: none}\nchannels:\n  mail:\n    kind: email\n    smtp:\n      addr: smtp:587\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"http.token", "bus: {kind: none}\nhttp:\n  token: abc\nchannels: {l: {kind: log}}\n",
			`alarm.yaml:3: field "http.token": a secret is never inline: put it in a file named by token_file, or in a variable named by token_env`},
		{"channels.*.bearer_token", "bus: {kind: none}\nchannels:\n  hook:\n    kind: webhook\n    url: http://h/x\n    bearer_token: t\n",
			`alarm.yaml:6: field "channels.hook.bearer_token": a secret is never inline: put it in a file named by bearer_token_file, or in a variable named by bearer_token_env`},
		{"channels.*.secret", "bus: {kind: none}\nchannels:\n  ding:\n    kind: dingtalk\n    secret: s\n",
			`alarm.yaml:5: field "channels.ding.secret": a secret is never inline: put it in a file named by secret_file, or in a variable named by secret_env`},
		{"channels.*.smtp.password", mail + "      password: pw\n",
			`alarm.yaml:7: field "channels.mail.smtp.password": a secret is never inline: put it in a file named by password_file, or in a variable named by password_env`},
		{"channels.*.smtp.ca_file", mail + "      ca_file: /etc/ca.pem\n",
			`alarm.yaml:7: field "channels.mail.smtp.ca_file": this key is now "channels.mail.smtp.tls.ca_file": rename it`},
		{"channels.*.smtp.insecure_skip_verify", mail + "      insecure_skip_verify: true\n",
			`alarm.yaml:7: field "channels.mail.smtp.insecure_skip_verify": this key is now "channels.mail.smtp.tls.insecure_skip_verify": rename it`},
		{"notify.backoff", "bus: {kind: none}\nnotify:\n  backoff: 2s\nchannels: {l: {kind: log}}\n",
			`alarm.yaml:3: field "notify.backoff": this key is now "notify.min_backoff": rename it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "alarm.yaml")
			require.NoError(t, os.WriteFile(p, []byte(tc.yaml), 0o600))
			_, err := Load(p)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestChannelSecretsFromVariables: every channel secret can come from a variable.
func TestChannelSecretsFromVariables(t *testing.T) {
	t.Setenv("ALARM_TEST_URL", "http://127.0.0.1:9/hook")
	t.Setenv("ALARM_TEST_TOKEN", "tok")
	p := filepath.Join(t.TempDir(), "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  hook: {kind: webhook, url_env: ALARM_TEST_URL, bearer_token_env: ALARM_TEST_TOKEN}\n"), 0o600))
	cfg, err := Load(p)
	require.NoError(t, err)
	chans, _, err := cfg.BuildChannels(quiet)
	require.NoError(t, err)
	require.Contains(t, chans, "hook")

	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  hook: {kind: webhook, url: http://h/x, secret_env: 1BAD}\n"), 0o600))
	_, err = Load(p)
	require.ErrorContains(t, err, `field "channels.hook.secret_env": "1BAD" is not an environment variable name`)
}

// TestChannelSMTPTLS: an email channel's tls block is the client block of every other
// section, checked when the channels are built (as --check does), naming its key.
func TestChannelSMTPTLS(t *testing.T) {
	p := filepath.Join(t.TempDir(), "alarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  mail:\n    kind: email\n    smtp:\n      addr: smtp:587\n      from: a@b\n      to: [c@d]\n      tls: {ca_file: /nonexistent/ca.pem, server_name: mx}\n"), 0o600))
	cfg, err := Load(p)
	require.NoError(t, err)
	_, _, err = cfg.BuildChannels(quiet)
	require.EqualError(t, err, `field "channels.mail.smtp.tls.ca_file": open /nonexistent/ca.pem: no such file or directory`)

	require.NoError(t, os.WriteFile(p, []byte("bus: {kind: none}\nchannels:\n  mail:\n    kind: email\n    smtp:\n      addr: smtp:587\n      from: a@b\n      to: [c@d]\n      tls: {server_name: mx}\n"), 0o600))
	cfg, err = Load(p)
	require.NoError(t, err)
	chans, _, err := cfg.BuildChannels(quiet)
	require.NoError(t, err)
	require.Contains(t, chans, "mail")
}
