package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/testenv"
)

func TestMain(m *testing.M) { testenv.RunRemovingBinlake(m) }

// validOptions are the defaults with an executable that exists: the test binary.
func validOptions() Options {
	o := DefaultOptions()
	o.Binary = os.Args[0]
	return o
}

func TestOptionsErrors(t *testing.T) {
	notExec := t.TempDir() + "/plain"
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"bus http", func(o *Options) { o.Bus = "http" }, `-bus "http": want kafka`},
		{"no binary", func(o *Options) { o.Binary = "" }, "no binlake binary"},
		{"missing binary", func(o *Options) { o.Binary = "/nonexistent/binlake" }, "/nonexistent/binlake"},
		{"binary not executable", func(o *Options) { o.Binary = notExec }, "is not an executable file"},
		{"no brokers", func(o *Options) { o.Brokers = nil }, "-brokers: at least one host:port"},
		{"broker without port", func(o *Options) { o.Brokers = []string{"127.0.0.1"} }, `-brokers: "127.0.0.1" is not host:port`},
		{"zero partitions", func(o *Options) { o.Partitions = 0 }, "-partitions 0: must be at least 1"},
		{"zero policies", func(o *Options) { o.Policies = 0 }, "-policies 0"},
		{"negative nodes", func(o *Options) { o.Nodes = -1 }, "-nodes -1"},
		{"zero rate", func(o *Options) { o.Rate = 0 }, "-rate 0"},
		{"batch below the node series", func(o *Options) { o.Batch = 7 }, "-batch 7: want 8 to 10000 points"},
		{"batch too large", func(o *Options) { o.Batch = 10_001 }, "-batch 10001"},
		{"negative violations", func(o *Options) { o.Violations = -1 }, "-violations -1"},
		{"more violations than nodes", func(o *Options) { o.Nodes, o.Violations = 5, 6 }, "-violations 6: want 0 to -nodes (5)"},
		{"zero duration", func(o *Options) { o.Duration = 0 }, "-duration 0s: must be positive"},
		{"prefix with a space", func(o *Options) { o.Prefix = "my bench" }, `-prefix "my bench": want 1 to 100 of A-Z a-z 0-9 . _ -`},
		// A violation rides on its node's batch: shorter than two batch intervals, some
		// were never sent and the run failed as if the alarm lost them.
		{"shorter than two batch intervals", func(o *Options) { o.Nodes, o.Batch, o.Rate, o.Duration = 1000, 100, 10_000, 5*time.Second },
			"-duration 5s: a node sends a batch every 10s at -rate 10000 (-nodes 1000 of -batch 100 points), and a violation rides on its node's batch: give -duration 20s or more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions()
			tc.edit(&o)
			err := o.validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	for _, edit := range []func(*Options){func(*Options) {}, func(o *Options) { o.Violations = 0 }, func(o *Options) { o.Policies = 3 }} {
		o := validOptions()
		edit(&o)
		if err := o.validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// parsePolicies runs the generated policies through the alarm's own parser.
func parsePolicies(t *testing.T, n int) []*policy.Policy {
	t.Helper()
	data, err := yaml.Marshal(map[string]any{"policies": policySpecs(n)})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := policy.Parse(bytes.NewReader(data), "policies.yaml")
	if err != nil {
		t.Fatalf("generated policies: %v\n%s", err, data)
	}
	return ps
}

// TestViolationFiresItsPolicyAlone checks what the bench's counts rely on: over the
// fleet's own series no policy is active, and a violation's point makes its target
// policy active and no other.
func TestViolationFiresItsPolicyAlone(t *testing.T) {
	const nodes, ticks = 50, 70
	ps := parsePolicies(t, 100)
	f := benchkit.NewFleet(nodes, 100)
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	viols := violations(20, nodes, len(ps))
	for node := range nodes {
		series := map[string][]policy.Sample{}
		for tick := range ticks {
			ts := base.Add(time.Duration(tick) * time.Second)
			for _, p := range f.Batch(node, tick, 100, ts, agentInterval).Points {
				if len(p.Labels) == 0 {
					series[p.Name] = append(series[p.Name], policy.Sample{TS: ts, Value: p.Value})
				}
			}
		}
		for _, p := range ps {
			if _, active, _ := p.Cond.Eval(series[p.Metric]); active {
				t.Fatalf("policy %s (%s) is active on node %d's own series", p.Name, p.Metric, node)
			}
		}
		for _, v := range viols {
			if v.node != node {
				continue
			}
			m := benchkit.NodeMetrics[v.metric]
			hit := append(series[m][:len(series[m]):len(series[m])], policy.Sample{TS: base.Add(ticks * time.Second), Value: violationValue})
			for _, p := range ps {
				if p.Metric != m {
					continue
				}
				_, active, _ := p.Cond.Eval(hit)
				if active != (p.Name == v.policy) {
					t.Errorf("violation %+v: policy %s (%s) active %v", v, p.Name, p.Metric, active)
				}
			}
		}
	}
}

func TestViolationsSpread(t *testing.T) {
	vs := violations(20, 1000, 100)
	nodes := map[int]bool{}
	for k, v := range vs {
		if v.at <= 0 || v.at >= 1 || (k > 0 && v.at <= vs[k-1].at) {
			t.Errorf("violation %d at %v: want increasing times within the load", k, v.at)
		}
		if nodes[v.node] || v.node < 0 || v.node >= 1000 {
			t.Errorf("violation %d on node %d: want a node of its own", k, v.node)
		}
		nodes[v.node] = true
		if v.policy != policyName(v.metric) || v.metric >= len(benchkit.NodeMetrics) {
			t.Errorf("violation %d targets %s on series %d: want the first policy of its series", k, v.policy, v.metric)
		}
	}
	// Fewer policies than series: only existing policies are targets.
	for _, v := range violations(5, 5, 2) {
		if v.metric >= 2 {
			t.Errorf("with 2 policies, violation %+v targets a missing one", v)
		}
	}
}

const metricsText = `# HELP binlake_alarm_points_total Metric points received.
# TYPE binlake_alarm_points_total counter
binlake_alarm_points_total 1.2345e+06
# TYPE binlake_alarm_evaluations_total counter
binlake_alarm_evaluations_total 987654
# TYPE binlake_alarm_decode_errors_total counter
binlake_alarm_decode_errors_total 2
# TYPE binlake_alarm_alerts gauge
binlake_alarm_alerts{state="firing"} 3
`

func TestParseCounters(t *testing.T) {
	c, err := parseCounters(strings.NewReader(metricsText))
	if err != nil {
		t.Fatal(err)
	}
	if want := (counters{Points: 1_234_500, Evaluations: 987_654, DecodeErrors: 2}); c != want {
		t.Errorf("parseCounters = %+v, want %+v", c, want)
	}
	for name, text := range map[string]string{
		"no points counter": "# TYPE binlake_alarm_evaluations_total counter\nbinlake_alarm_evaluations_total 5\n",
		"not text format":   "binlake_alarm_points_total{ 5\n",
		"points as a gauge": "# TYPE binlake_alarm_points_total gauge\nbinlake_alarm_points_total 5\n",
	} {
		if _, err := parseCounters(strings.NewReader(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseCounters(f *testing.F) {
	f.Add([]byte(metricsText))
	f.Add([]byte("binlake_alarm_points_total NaN\n"))
	f.Add([]byte("# TYPE x counter\nx{a=\"\\\"\"} 1 17\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseCounters(bytes.NewReader(data))
		if err != nil && c != (counters{}) {
			t.Fatalf("error %v with counters %+v", err, c)
		}
	})
}

// TestReceiver: the first firing arrival of each alert is kept; resolved alerts, repeats
// and bodies that are not payloads are not arrivals.
func TestReceiver(t *testing.T) {
	r := &receiver{firing: map[alertKey]time.Time{}, changed: make(chan struct{})}
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	body := func(status string, pairs ...string) []byte {
		var b strings.Builder
		b.WriteString(`{"version":"4","status":"` + status + `","alerts":[`)
		for i := 0; i < len(pairs); i += 2 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"status":"` + status + `","labels":{"alertname":"` + pairs[i] + `","node":"` + pairs[i+1] + `"}}`)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	keys := []alertKey{{"bench-000", "n1"}, {"bench-001", "n2"}, {"bench-002", "n3"}}
	_, changed := r.arrivals(keys)
	r.record(t0, body("firing", "bench-000", "n1", "bench-001", "n2"), nil)
	select {
	case <-changed:
	default:
		t.Fatal("a new firing alert did not signal")
	}
	r.record(t0.Add(time.Second), body("firing", "bench-000", "n1"), nil)
	r.record(t0.Add(2*time.Second), body("resolved", "bench-002", "n3"), nil)
	r.record(t0.Add(3*time.Second), []byte("not json"), nil)
	at, _ := r.arrivals(keys)
	if !at[0].Equal(t0) || !at[1].Equal(t0) || !at[2].IsZero() {
		t.Errorf("arrivals %v: want t0, t0 and none", at)
	}
	if req, bad, alerts := r.stats(); req != 4 || bad != 1 || alerts != 2 {
		t.Errorf("stats = %d requests, %d bad, %d alerts; want 4, 1, 2", req, bad, alerts)
	}
}

func TestReport(t *testing.T) {
	r := &Result{Topic: "binlake-bench-alarm-1", Nodes: 1000, Policies: 100, Partitions: 3, Batch: 100, Target: 100_000,
		Produced: 3_000_100, LoadPoints: 3_000_000, Load: 30 * time.Second, Evaluated: 3_000_100, Evaluations: 9_000_000,
		EvaluatedInLoad: 2_700_000, AllEvaluated: 40 * time.Second, LagAtLoadEnd: 1234, LagSettled: 5 * time.Millisecond,
		Violations: 20, Sent: 20, Arrived: 19, Latency: benchkit.Latency{P50: 12_300 * time.Microsecond, P99: 250 * time.Millisecond, Max: 250 * time.Millisecond},
		WebhookRequests: 38, WebhookAlerts: 19,
		AlarmCPU: 20 * time.Second, BenchCPU: 4 * time.Second, BrokerCPU: -1, BrokerNote: "broker 10.0.0.9:9092 is not on this machine", Window: 40 * time.Second}
	var out strings.Builder
	report(&out, r)
	for _, want := range []string{
		"offered: 3000000 points in 30s: 100000 points/s (target 100000)",
		"sustained: 90000 points/s during the load; all evaluated 40s after the first send: 75000 points/s",
		"consumer lag: 1234 messages when the load stopped, 0 at the end",
		"violations: 19/20 arrived (20 sent); violation → webhook p50 12.3 ms, p99 250.0 ms",
		"alarm 20.00 s (0.50 cores), bench 4.00 s (0.10 cores), Kafka broker n/a (broker 10.0.0.9:9092 is not on this machine)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	r.BrokerCPU, r.BrokerPID, r.Violations = 6*time.Second, 4242, 0
	out.Reset()
	report(&out, r)
	if s := out.String(); !strings.Contains(s, "Kafka broker 6.00 s (0.15 cores) (pid 4242)") || !strings.Contains(s, "violations: none injected") {
		t.Errorf("report with the broker's pid and no violations:\n%s", s)
	}
}
