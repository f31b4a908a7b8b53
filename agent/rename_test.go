package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigOldKeys: every key agent.yaml no longer takes is refused at its line with
// what replaced it, not as an unknown key; so is the judge's token in the variable
// older agents read it from, which would otherwise be ignored (and the judge answer 401).
func TestConfigOldKeys(t *testing.T) {
	const http = "sink:\n  kind: http\n  http:\n    url: https://judge:8090/v1/metrics\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"metrics_listen", "metrics_listen: 127.0.0.1:9108\n", `agent.yaml:1: field "metrics_listen": this key is now "http.listen": rename it`},
		{"sink.type", "sink:\n  type: http\n", `agent.yaml:2: field "sink.type": this key is now "sink.kind": rename it`},
		{"sink.http.token", http + "    token: abc\n",
			`agent.yaml:5: field "sink.http.token": a secret is never inline: put it in a file named by token_file, or in a variable named by token_env`},
		{"sink.http.ca_file", http + "    ca_file: /etc/ca.pem\n", `agent.yaml:5: field "sink.http.ca_file": this key is now "sink.http.tls.ca_file": rename it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml)
			require.ErrorContains(t, err, tc.want)
		})
	}

	t.Run(OldTokenEnv, func(t *testing.T) {
		t.Setenv(OldTokenEnv, "tok")
		_, err := load(t, http)
		require.ErrorContains(t, err, `field "sink.http.token_env": the variable BINLAKE_AGENT_TOKEN is set: the judge's token is now read from BINLAKE_JUDGE_TOKEN (or the variable token_env names): rename it`)
		c, err := load(t, http+"    token_env: "+OldTokenEnv+"\n")
		require.NoError(t, err, "named on purpose")
		require.Equal(t, OldTokenEnv, c.Sink.HTTP.TokenEnv)
	})
	t.Run("default variable", func(t *testing.T) {
		c, err := load(t, http)
		require.NoError(t, err)
		require.Equal(t, "BINLAKE_JUDGE_TOKEN", c.Sink.HTTP.TokenEnv)
	})
}
