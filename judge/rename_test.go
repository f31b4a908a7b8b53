package judge

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigOldKeys: every key judge.yaml no longer takes is refused at its line with
// what replaced it, not as an unknown key.
func TestConfigOldKeys(t *testing.T) {
	const es = "bus: {kind: none}\nstore:\n  kind: elastic\n  elastic:\n    addresses: [https://h:9200]\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"http.token", "bus: {kind: none}\nhttp:\n  token: abc\n",
			`judge.yaml:3: field "http.token": a secret is never inline: put it in a file named by token_file, or in a variable named by token_env`},
		{"store.elastic.password", es + "    username: u\n    password: pw\n",
			`judge.yaml:7: field "store.elastic.password": a secret is never inline: put it in a file named by password_file, or in a variable named by password_env`},
		{"store.elastic.api_key", es + "    api_key: k\n",
			`judge.yaml:6: field "store.elastic.api_key": a secret is never inline: put it in a file named by api_key_file, or in a variable named by api_key_env`},
		{"store.elastic.ca_file", es + "    ca_file: /etc/ca.pem\n",
			`judge.yaml:6: field "store.elastic.ca_file": this key is now "store.elastic.tls.ca_file": rename it`},
		{"status.alarm_ca_file", "bus: {kind: none}\nstatus:\n  alarm_ca_file: /etc/ca.pem\n",
			`judge.yaml:3: field "status.alarm_ca_file": this key is now "status.tls.ca_file": rename it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadYAML(t, tc.yaml)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
