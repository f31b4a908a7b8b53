//go:build !agentonly

package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/wave"
)

// firing records the alerts the engine sends, as "policy instance: summary".
type firing struct {
	mu  sync.Mutex
	got []string
}

func (f *firing) send(m notify.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range m.Alerts {
		if a.Status == "firing" {
			f.got = append(f.got, a.Labels["alertname"]+" "+a.Labels["instance"]+": "+a.Annotations["summary"])
		}
	}
}

func (f *firing) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.got
	f.got = nil
	slices.Sort(out)
	return out
}

// TestDefaultWavePoliciesFire runs the built-in policies on an alarm engine with an
// injected clock: a capture instance that stays not running for a minute, and one whose
// lag stays above 60 s, each fire an alert that names the instance (and the reason);
// a running instance with a small lag fires nothing.
func TestDefaultWavePoliciesFire(t *testing.T) {
	pols, err := DefaultPolicies()
	if err != nil {
		t.Fatal(err)
	}
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), CoordFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	var out firing
	e := alarm.NewEngine(alarm.EngineOptions{Policies: pols, Log: &alarm.CoordLog{C: c}, Send: out.send,
		Now: func() time.Time { return now }, Logger: quietLogger()})
	if _, err := e.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	point := func(name string, v float64, labels ...string) metric.Point {
		p := metric.Point{Name: name, Value: v, Labels: map[string]string{}}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
		return p
	}
	tick := func(lag float64) {
		e.Observe(metric.Batch{Node: "db-host", TS: now, IntervalS: 10, Points: []metric.Point{
			point(metric.WaveInstanceRunning, 0, "instance", "local", "state", wave.StateRetrying, "reason", wave.ReasonBinlogOff),
			point(metric.WaveInstanceRunning, 1, "instance", "orders", "state", wave.StateRunning),
			point(metric.WaveLagSeconds, lag, "instance", "orders"),
			point(metric.WaveLagSeconds, 5, "instance", "users"),
			point(metric.WaveLagSeconds, lag), // the agent's unlabelled largest lag: no second page
		}})
		e.Tick()
		e.Sync() // the engine's writer sends what became due
		now = now.Add(10 * time.Second)
	}
	for range 6 { // 50 s: both conditions hold, neither for a minute yet
		tick(120)
	}
	if got := out.take(); len(got) != 0 {
		t.Fatalf("fired within the first minute: %v", got)
	}
	for range 3 { // to 80 s: a minute since the lag's average of 3 points (from 20 s) is above 60
		tick(120)
	}
	got := out.take()
	want := []string{
		"replication-lag orders: capture of orders lags 120s on db-host",
		"wave-not-running local: capture instance local on db-host is not running: retrying, binlog_off (the error is on the wave's /status)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fired:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDefaultCapacityPolicyFires runs the built-in cluster-capacity policy on an alarm
// engine with an injected clock: the balancer's node reporting a cluster mean load above
// 40000 fires once it has held for 30 minutes, not before, with the summary that says to
// add a wave; a load below the threshold, or one whose 30-minute average stays below it
// despite a short peak, fires nothing.
func TestDefaultCapacityPolicyFires(t *testing.T) {
	pols, err := DefaultPolicies()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pols, func(p *policy.Policy) bool { return p.Name == "cluster-capacity" })
	if i < 0 {
		t.Fatal("no built-in policy cluster-capacity")
	}
	p := pols[i]
	if p.Metric != metric.WaveClusterLoad || p.For != 30*time.Minute || p.Severity != 3 ||
		!slices.Contains(p.Channels, LogChannel) {
		t.Fatalf("cluster-capacity: metric %s, for %s, severity %s, channels %v", p.Metric, p.For, p.Severity, p.Channels)
	}
	if p.Cond == nil || p.Cond.Func != policy.FuncAvgOver || p.Cond.Window != 30*time.Minute ||
		p.Cond.Op != policy.OpGT || p.Cond.Threshold != 40000 {
		t.Fatalf("cluster-capacity: condition %v", p.Cond)
	}

	// run feeds the balancer node's wave.cluster_load every 10 s for d, the value at each
	// moment from load, to an engine running every built-in policy, and returns when the
	// first alert fired (0: none) and what it said.
	run := func(t *testing.T, d time.Duration, load func(since time.Duration) float64) (time.Duration, []string) {
		c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), CoordFile)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
		now := start
		var out firing
		e := alarm.NewEngine(alarm.EngineOptions{Policies: pols, Log: &alarm.CoordLog{C: c}, Send: out.send,
			Now: func() time.Time { return now }, Logger: quietLogger()})
		if _, err := e.Restore(context.Background()); err != nil {
			t.Fatal(err)
		}
		for ; now.Sub(start) <= d; now = now.Add(10 * time.Second) {
			e.Observe(metric.Batch{Node: "wave-2", TS: now, IntervalS: 10, Points: []metric.Point{
				{Name: metric.WaveClusterLoad, Value: load(now.Sub(start))},
			}})
			e.Tick()
			e.Sync()
			if got := out.take(); len(got) > 0 {
				return now.Sub(start), got
			}
		}
		return 0, nil
	}

	t.Run("sustained above", func(t *testing.T) {
		at, got := run(t, 2*time.Hour, func(time.Duration) float64 { return 45000 })
		if at != 30*time.Minute {
			t.Fatalf("fired at %s, want after the 30 minutes of for: %v", at, got)
		}
		want := []string{"cluster-capacity : the cluster's mean load per wave is 45000 (rows/s-equivalent), above 40000: " +
			"add a wave (binlake wave on a new host); it takes its share through the balancer (automatic mode) or " +
			"`binlake instance rebalance --apply`"}
		if !slices.Equal(got, want) {
			t.Fatalf("fired:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("below", func(t *testing.T) {
		if at, got := run(t, 2*time.Hour, func(time.Duration) float64 { return 39000 }); len(got) != 0 {
			t.Fatalf("fired at %s: %v", at, got)
		}
	})
	t.Run("short peak", func(t *testing.T) {
		// 5 minutes at 60000 in an hour at 30000: the 30-minute average peaks near 35000.
		load := func(since time.Duration) float64 {
			if since >= 20*time.Minute && since < 25*time.Minute {
				return 60000
			}
			return 30000
		}
		if at, got := run(t, 2*time.Hour, load); len(got) != 0 {
			t.Fatalf("fired at %s: %v", at, got)
		}
	})
	t.Run("above for less than for", func(t *testing.T) {
		// 20 minutes above, then back under: the average comes down below the threshold
		// before the condition has held for 30 minutes.
		load := func(since time.Duration) float64 {
			if since < 20*time.Minute {
				return 45000
			}
			return 20000
		}
		if at, got := run(t, 2*time.Hour, load); len(got) != 0 {
			t.Fatalf("fired at %s: %v", at, got)
		}
	})
}
