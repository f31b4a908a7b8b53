package alarm

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
)

// concurrentPolicies page on cpu (two severities, for inhibition), on a labelled series,
// and on silence.
const concurrentPolicies = `policies:
  - name: cpu-critical
    metric: cpu.util
    condition: last > 97
    severity: P0
    channels: [c]
  - name: cpu-high
    metric: cpu.util
    condition: avg(#2) > 80
    severity: P3
    channels: [c]
    repeat_interval: 1m
  - name: lag
    metric: wave.lag_s
    nodes: {labels: {instance: "*"}}
    condition: last > 60
    severity: P1
    channels: [c]
` + nodataPolicy

// fleetBatch is node i's batch in round r: its cpu and lag go up and down on their own
// rhythm; every fifth node stops sending after round 8 (nodata).
func fleetBatch(i, r int, at time.Time) (metric.Batch, bool) {
	if i%5 == 0 && r > 8 {
		return metric.Batch{}, false
	}
	v := 10.0
	switch (i + r) % 7 {
	case 0, 1:
		v = 99
	case 2, 3:
		v = 85
	}
	lag := metric.Point{Name: "wave.lag_s", Value: float64((i * r) % 90), Labels: map[string]string{"instance": fmt.Sprintf("db-%d", i%3)}}
	return batch(fmt.Sprintf("wave-%02d", i), at, cpu(v), lag), true
}

// runFleet drives a rig through the rounds, the nodes' batches of a round observed by
// workers goroutines at once (each owning every workers-th node, as a partition does),
// then a tick. It returns the alerts at the end and every notification sent.
func runFleet(t *testing.T, workers int) ([]AlertView, []string) {
	const nodes, rounds = 16, 14
	r := newRig(t, concurrentPolicies, func(o *EngineOptions) { o.Inhibition.Enabled = true })
	var sent []string
	for round := range rounds {
		r.clk.Add(10 * time.Second)
		at := r.clk.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < nodes; i += workers {
					if b, ok := fleetBatch(i, round, at); ok {
						r.e.Observe(b)
					}
				}
			}()
		}
		wg.Wait()
		r.e.Tick()
		sent = append(sent, r.out.take()...)
	}
	return r.e.Alerts(), sent
}

// Several goroutines observing at once (the bus delivering partitions concurrently) end
// with the same alerts and the same notifications as one goroutine observing in turn.
func TestConcurrentObserveMatchesSerial(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	wantAlerts, wantSent := runFleet(t, 1)
	require.NotEmpty(t, wantAlerts)
	firing := 0
	for _, a := range wantAlerts {
		if a.State == "firing" {
			firing++
		}
	}
	require.Positive(t, firing, "the fleet must leave alerts firing, or the comparison says little")
	slices.Sort(wantSent)
	for _, workers := range []int{2, 4} {
		gotAlerts, gotSent := runFleet(t, workers)
		require.Equal(t, wantAlerts, gotAlerts, "%d workers: alerts", workers)
		slices.Sort(gotSent)
		require.Equal(t, wantSent, gotSent, "%d workers: notifications", workers)
	}
}
