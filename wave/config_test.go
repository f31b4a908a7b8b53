package wave

import (
	"strings"
	"testing"
	"time"
)

// TestConfigOldKeys: every key wave.yaml no longer takes is refused at its line with the
// key that replaced it, not as an unknown key.
func TestConfigOldKeys(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"http_addr", strings.Replace(goodConfig, "http:\n  listen: 127.0.0.1:8091", "http_addr: 127.0.0.1:8091", 1),
			`wave.yaml:2: field "http_addr": this key is now "http.listen": rename it`},
		{"coordinator.type", strings.Replace(goodConfig, "kind: zk", "type: zk", 1),
			`wave.yaml:5: field "coordinator.type": this key is now "coordinator.kind": rename it`},
		{"sink.type", strings.Replace(goodConfig, "kind: kafka", "type: kafka", 1),
			`wave.yaml:9: field "sink.type": this key is now "sink.kind": rename it`},
		{"pipeline.publish_backoff_max", goodConfig + "  publish_backoff_max: 5s\n",
			`wave.yaml:14: field "pipeline.publish_backoff_max": this key is now "pipeline.publish_max_backoff": rename it`},
		{"pipeline.reconnect_backoff_max", goodConfig + "  reconnect_backoff_max: 5s\n",
			`wave.yaml:14: field "pipeline.reconnect_backoff_max": this key is now "pipeline.reconnect_max_backoff": rename it`},
		{"balancer.judge_ca_file", goodConfig + "balancer:\n  judge: https://judge:8090\n  judge_ca_file: /etc/ca.pem\n",
			`wave.yaml:16: field "balancer.judge_ca_file": this key is now "balancer.tls.ca_file": rename it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestConfigInlineSecret: a secret written inline in wave.yaml is refused at its line
// with where it goes instead, as the judge's and the agent's configs answer it, not as an
// unknown key; the value is not repeated.
func TestConfigInlineSecret(t *testing.T) {
	const never = "a secret is never inline: put it in a file named by "
	for _, tc := range []struct{ name, body, want string }{
		{"sink.kafka.sasl.password", strings.Replace(goodConfig, "brokers: [127.0.0.1:9092]", "brokers: [127.0.0.1:9092]\n    sasl: {mechanism: plain, username: u, password: s3cret}", 1),
			`wave.yaml:12: field "sink.kafka.sasl.password": ` + never + "password_file, or in a variable named by password_env"},
		{"coordinator.auth.password", strings.Replace(goodConfig, "session_timeout: 4s", "session_timeout: 4s\n  auth:\n    username: u\n    password: s3cret", 1),
			`wave.yaml:10: field "coordinator.auth.password": ` + never + "password_file, or in a variable named by password_env"},
		{"balancer.judge_token", goodConfig + "balancer:\n  judge: http://judge:8090\n  judge_token: s3cret\n",
			`wave.yaml:16: field "balancer.judge_token": ` + never + "judge_token_file, or in a variable named by judge_token_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestConfigJudgeToken: the balancer reads the judge's token from the judge's own
// variable unless judge_token_env names another.
func TestConfigJudgeToken(t *testing.T) {
	cfg, err := Load(writeFile(t, goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Balancer.JudgeToken().Env; got != "BINLAKE_JUDGE_TOKEN" {
		t.Errorf("judge_token_env defaults to %q, want BINLAKE_JUDGE_TOKEN", got)
	}
	t.Setenv("WAVE_TEST_JUDGE_TOKEN", "tok")
	cfg, err = Load(writeFile(t, goodConfig+"balancer:\n  judge: http://judge:8090\n  judge_token_env: WAVE_TEST_JUDGE_TOKEN\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := cfg.Balancer.JudgeToken().Resolve(); err != nil || tok.Reveal() != "tok" {
		t.Errorf("token from judge_token_env: %v, %v", tok, err)
	}
}

// TestConfigPipelineOptions: a Kafka sink's batch size, message bytes and linger bound
// and pace the publisher's produce requests; another sink leaves them unbounded.
func TestConfigPipelineOptions(t *testing.T) {
	body := strings.Replace(goodConfig, "brokers: [127.0.0.1:9092]", "brokers: [127.0.0.1:9092]\n    batch_size: 500\n    linger: 7ms", 1)
	cfg, err := Load(writeFile(t, body))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.PipelineOptions()
	if o.PublishChunkMessages != 500 || o.PublishChunkBytes != 1<<20 || o.PublishLinger != 7*time.Millisecond || o.BatchRows != 1000 {
		t.Errorf("kafka sink: chunks of %d messages and %d bytes, linger %s, batches of %d rows; want 500, %d, 7ms, 1000",
			o.PublishChunkMessages, o.PublishChunkBytes, o.PublishLinger, o.BatchRows, 1<<20)
	}
	cfg.Sink.Kind = SinkStdout
	if o := cfg.PipelineOptions(); o.PublishChunkMessages != 0 || o.PublishChunkBytes != 0 || o.PublishLinger != 0 {
		t.Errorf("stdout sink: chunks of %d messages and %d bytes, linger %s; want none", o.PublishChunkMessages, o.PublishChunkBytes, o.PublishLinger)
	}
}

// TestConfigReportsEveryRefusedValue: every value Validate refuses is reported at once,
// in the file's order, each at its line and key: not the first alone, to fix and run
// again. A value that can only be checked against a refused one is left out.
func TestConfigReportsEveryRefusedValue(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string // after "wave.yaml", in order; nil: valid
	}{
		{"valid", goodConfig, nil},
		{"three sections", strings.Replace(strings.Replace(goodConfig, "node: wave-1", `node: "wave 1"`, 1), "batch_rows: 1000", "batch_rows: 0", 1) +
			"balancer:\n  judge: judge:8090\n", []string{
			`:1: field "node": "wave 1": want 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit`,
			`:13: field "pipeline.batch_rows": 0: want at least 1`,
			`:15: field "balancer.judge": "judge:8090": want the judge's base URL, such as http://judge:8090`,
		}},
		{"a refused session timeout", strings.Replace(strings.Replace(goodConfig, "session_timeout: 4s", "session_timeout: -1s", 1),
			"brokers: [127.0.0.1:9092]", "brokers: [127.0.0.1:9092]\n    linger: 0s\n    compression: brotli\n    write_timeout: 2s", 1), []string{
			// Once, in the wave's words, not also as the section's "want 0 or more"; and
			// write_timeout is not held to a quarter of it.
			`:7: field "coordinator.session_timeout": -1s: want more than 0`,
			`:12: field "sink.kafka.linger": 0s: want more than 0`,
			`:13: field "sink.kafka.compression": "brotli": want none, gzip, snappy, lz4 or zstd`,
		}},
		{"file sink", "node: w1\nadvertise_addr: wave-1\ncoordinator: {kind: single, path: ./c.json}\nsink: {kind: file}\n" +
			"pipeline: {heartbeat: 0s}\nbalancer: {judge: \"judge:8090\", tls: {cert_file: c.pem}, in_flight: 0}\n", []string{
			`:2: field "advertise_addr": "wave-1": want host:port, e.g. wave-1:8091 (the address other hosts reach http.listen at)`,
			`:4: field "sink.file.path": required for the file sink`,
			`:5: field "pipeline.heartbeat": 0s: want more than 0`,
			// The tls block beside a refused judge URL: its keys, not "the URL is not https://".
			`:6: field "balancer.judge": "judge:8090": want the judge's base URL, such as http://judge:8090`,
			`:6: field "balancer.tls.key_file": required with cert_file`,
			`:6: field "balancer.in_flight": 0: want at least 1`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.body)
			_, err := Load(p)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := p + strings.Join(tc.want, "\n"+p); err == nil || err.Error() != want {
				t.Fatalf("err =\n%v\nwant\n%s", err, want)
			}
		})
	}
}

// TestConfigJudgeBaseURL: balancer.judge with a query or a fragment is refused: the
// API's paths were appended to it (http://judge:8090/?region=eu/v1/rebalance).
func TestConfigJudgeBaseURL(t *testing.T) {
	_, err := Load(writeFile(t, goodConfig+"balancer:\n  judge: \"http://judge:8090/?region=eu\"\n"))
	want := `wave.yaml:15: field "balancer.judge": "http://judge:8090/?region=eu" has a query or a fragment: want the base URL alone`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestConfigJudgeURLCredentials: balancer.judge with a user and password is refused, as
// the agent's sink.http.url and the judge's status.alarm_url are (the URL is logged at
// start: "wave starting … judge=…"), naming the key and never showing the password; a
// malformed one too.
func TestConfigJudgeURLCredentials(t *testing.T) {
	for _, judge := range []string{"http://admin:Hunter2J@127.0.0.1:18090", "http://admin:Hunter2J/x@127.0.0.1:18090", "https://Hunter2J@judge:8090",
		"http://judge:8090/?jwt=Hunter2J", "http://judge:8090/#access_token=Hunter2J"} {
		_, err := Load(writeFile(t, goodConfig+"balancer:\n  judge: \""+judge+"\"\n"))
		want := `wave.yaml:15: field "balancer.judge": credentials in the URL would be logged: use judge_token_file or judge_token_env`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", judge, err, want)
		} else if strings.Contains(err.Error(), "Hunter2J") {
			t.Errorf("%s: the password is shown: %v", judge, err)
		}
	}
}
