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
