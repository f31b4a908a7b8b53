package alarm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/metric"
)

const replayPolicies = `policies:
  - name: cpu-high
    metric: cpu.util
    condition: "last > 90"
    for: 30s
    severity: P2
    annotations:
      summary: "CPU on {{ .Node }} is {{ .Value }}%"
    channels: [c]
  - name: agent-dead
    nodata: 3
    nodes: {names: [wave-2]}
    severity: P0
    channels: [c]
`

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func tp2(s int) *time.Time { v := at(s); return &v }

// A replay fires and resolves on the batches' own clock, to the evaluation interval:
// cpu-high holds from the batch at 30 s, fires once `for` (30 s) has passed, at the
// batch at 60 s, and resolves at the first batch under the threshold (90 s); wave-2,
// silent after 50 s, is dead once more than 3 intervals (30 s) passed without a batch,
// at the tick of 81 s, and alive again with its batch at 200 s. cpu-high fires a second
// time from 220 s and is still firing when the history ends at 250 s.
func TestReplayFiresAndResolvesOnTheBatchesClock(t *testing.T) {
	r, err := NewReplay(ReplayOptions{Policies: parsePolicies(t, replayPolicies), Logger: quiet})
	require.NoError(t, err)
	for s := 0; s <= 250; s += 10 {
		v := 50.0
		if s >= 30 && s < 90 || s >= 190 {
			v = 95
		}
		require.NoError(t, r.Observe(metric.Batch{Node: "wave-1", TS: at(s), IntervalS: 10, Points: []metric.Point{cpu(v)}}))
		if s <= 50 || s >= 200 {
			require.NoError(t, r.Observe(metric.Batch{Node: "wave-2", TS: at(s), IntervalS: 10, Points: []metric.Point{cpu(10)}}))
		}
	}
	eps, messages := r.Finish(time.Time{})
	require.Len(t, eps, 3)
	require.Equal(t, Episode{Policy: "cpu-high", Severity: "P2", Node: "wave-1",
		Labels:  map[string]string{"alertname": "cpu-high", "node": "wave-1", "severity": "P2", "metric": "cpu.util"},
		FiredAt: at(60), ResolvedAt: tp2(90), Value: 95, Annotations: map[string]string{"summary": "CPU on wave-1 is 95%"}}, eps[0])
	require.Equal(t, "agent-dead", eps[1].Policy)
	require.Equal(t, "wave-2", eps[1].Node)
	require.Equal(t, at(81), eps[1].FiredAt)
	require.Equal(t, tp2(200), eps[1].ResolvedAt)
	require.Equal(t, "cpu-high", eps[2].Policy)
	require.Equal(t, at(220), eps[2].FiredAt)
	require.Nil(t, eps[2].ResolvedAt, "still firing at the end of the history")
	// Each firing and each resolution went out once (group_wait 0): 3 pages, 2 notices.
	require.Equal(t, 5, messages)
}

// A batch older than the replay's clock is refused with both times, not evaluated out
// of order; one without a time is refused too.
func TestReplayRefusesBatchesOutOfOrder(t *testing.T) {
	r, err := NewReplay(ReplayOptions{Policies: parsePolicies(t, replayPolicies), Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, r.Observe(metric.Batch{Node: "wave-1", TS: at(10), IntervalS: 10, Points: []metric.Point{cpu(1)}}))
	err = r.Observe(metric.Batch{Node: "wave-2", TS: at(5), IntervalS: 10, Points: []metric.Point{cpu(1)}})
	require.ErrorContains(t, err, `batch of node "wave-2" at 2026-11-29T14:00:05Z is older than one replayed before it (2026-11-29T14:00:10Z)`)
	err = r.Observe(metric.Batch{Node: "wave-2", IntervalS: 10, Points: []metric.Point{cpu(1)}})
	require.ErrorContains(t, err, `batch of node "wave-2" has no ts`)
}

// Warm takes history before the replay's first batch only, and with a time: the replay's
// windows cannot take points among those already evaluated.
func TestReplayWarmsOnlyBeforeItBegins(t *testing.T) {
	r, err := NewReplay(ReplayOptions{Policies: parsePolicies(t, lagWindowPolicy), Logger: quiet})
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, r.Lookback())
	require.ErrorContains(t, r.Warm(metric.Batch{Node: "wave-1", Points: []metric.Point{lag(1)}}), `batch of node "wave-1" has no ts`)
	require.NoError(t, r.Warm(metric.Batch{Node: "wave-1", TS: at(0), Points: []metric.Point{lag(10)}}))
	require.NoError(t, r.Observe(metric.Batch{Node: "wave-1", TS: at(10), IntervalS: 10, Points: []metric.Point{lag(20)}}))
	require.ErrorContains(t, r.Warm(metric.Batch{Node: "wave-1", TS: at(5), Points: []metric.Point{lag(1)}}), "after the replay began")
	eps, _ := r.Finish(time.Time{})
	require.Len(t, eps, 1)
	require.Equal(t, 15.0, eps[0].Value, "the warmed point and the first observed one")
}

// MemoryLog keeps the coordinator's compare-and-set rules, which the engine's claims
// rest on.
func TestMemoryLogVersions(t *testing.T) {
	ctx := context.Background()
	var l MemoryLog
	e := LogEntry{Fingerprint: "f1", Policy: "p"}
	require.NoError(t, l.Put(ctx, e, coord.NoVersion))
	require.True(t, errors.Is(l.Put(ctx, e, coord.NoVersion), coord.ErrVersionConflict), "create twice")
	_, v, err := l.Get(ctx, "f1")
	require.NoError(t, err)
	require.True(t, errors.Is(l.Put(ctx, e, v+1), coord.ErrVersionConflict), "stale version")
	require.NoError(t, l.Put(ctx, e, v))
	require.True(t, errors.Is(l.Remove(ctx, "f1", v), coord.ErrVersionConflict), "removed at an old version")
	require.NoError(t, l.Save(ctx, e))
	require.NoError(t, l.Remove(ctx, "f1", coord.AnyVersion))
	_, _, err = l.Get(ctx, "f1")
	require.True(t, errors.Is(err, coord.ErrNotFound))
	require.True(t, errors.Is(l.Put(ctx, e, 3), coord.ErrVersionConflict), "a version of a missing entry")
	entries, err := l.Load(ctx)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// A replay mutes what the alarm would: with inhibition on (the alarm's default), a
// firing P0 on a node holds back the P3 page of the same node; both alerts still fire.
func TestReplayInhibits(t *testing.T) {
	for _, tc := range []struct {
		inhibit  bool
		messages int
	}{{true, 1}, {false, 2}} {
		r, err := NewReplay(ReplayOptions{Policies: parsePolicies(t, inhibitingPolicies), Logger: quiet, Inhibition: Inhibition{Enabled: tc.inhibit}})
		require.NoError(t, err)
		for s := 0; s <= 60; s += 10 {
			require.NoError(t, r.Observe(metric.Batch{Node: "wave-1", TS: at(s), IntervalS: 10, Points: []metric.Point{cpu(99)}}))
		}
		eps, messages := r.Finish(time.Time{})
		require.Len(t, eps, 2, "inhibition %v: both alerts fire", tc.inhibit)
		require.Equal(t, tc.messages, messages, "inhibition %v: pages sent", tc.inhibit)
	}
}
