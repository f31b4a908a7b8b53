package alarm

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
)

// loadPolicies add a policy over every load node's 99 labelled series, which never
// fires, so that the load is evaluated, not only decoded.
const loadPolicies = shardPolicies + `  - name: disk
    metric: disk.used_pct
    condition: max(#3) > 99
    severity: P3
    channels: [c]
`

// TestAlarmKill9UnderLoadIntegration (issue 20): one `binlake alarm` consuming a real
// Kafka topic under load (500 nodes × 100 points a second, on top of the agents whose
// violations page) is killed with SIGKILL after its first pages, while nodes go on
// violating and new ones start to while it is down, and is started again. Every
// violating node pages exactly once (none lost, none sent twice within the 4 h repeat
// interval), every resolution arrives, and no node pages nodata.
func TestAlarmKill9UnderLoadIntegration(t *testing.T) {
	r := newProcessRig(t, "alarmkillload", 4*time.Minute)
	ctx, topic, group, rcv, cfg, pub, kc := r.ctx, r.topic, r.group, r.rcv, r.cfg, r.pub, r.kc
	load := startLoad(t, ctx, pub, topic, 500, 100)
	loadStart := time.Now()
	proc := startAlarmProc(t, "alarm-load", cfg, loadPolicies)
	waitMembers(t, ctx, kc, group, 1)

	nodes, before := shardNodes(12, metric.TopicPartitions, 4)
	agents := startFleet(t, ctx, pub, topic, nodes, before)
	rcv.waitPages(t, "first pages", func(pg pages) bool { return len(pg.firing) == len(before) })
	waitLog(t, ctx, &CoordLog{C: r.zc}, len(before))
	// Kill it in the middle of the load, not at its start.
	require.Eventually(t, func() bool { return load.points.Load() >= 5*500*100 }, waitLimit, waitTick, "five seconds of load")

	proc.Kill(t)
	killedAt, loadAtKill := time.Now(), load.points.Load()
	// While it is down, two more nodes start violating.
	late := []string{"late-00", "late-01"}
	lateAgents := startFleet(t, ctx, pub, topic, append(late, "late-02"), late)
	watch(6 * time.Second)
	proc = startAlarmProc(t, "alarm-load2", cfg, loadPolicies)
	t.Logf("alarm killed under load (%d points published by then), restarted after %s", loadAtKill, time.Since(killedAt).Round(100*time.Millisecond))
	require.GreaterOrEqual(t, loadAtKill, int64(5*500*100), "the kill came five seconds into the load")
	violating := append(append([]string{}, before...), late...)
	rcv.waitPages(t, "the late violations paged", func(pg pages) bool { return len(pg.firing) == len(violating) })
	watch(5 * time.Second)

	agents.heal()
	lateAgents.heal()
	rcv.waitPages(t, "resolutions", func(pg pages) bool { return len(pg.resolved) == len(violating) })
	watch(3 * time.Second)
	pg := rcv.pages() // as the observation ends: silent agents would page nodata (3 intervals on)
	agents.stop()
	lateAgents.stop()
	load.stop()
	require.NoError(t, proc.Exited(), "the restarted alarm keeps running")
	rate := float64(load.points.Load()) / time.Since(loadStart).Seconds()
	t.Logf("load: %d points published in all, %.0f points/s", load.points.Load(), rate)
	require.Greater(t, rate, 25_000.0, "the alarm was under load")
	requirePagedOnce(t, pg, violating, agents, lateAgents)
}

// loadFleet publishes n healthy nodes' batches of size points (cpu and size-1 labelled
// disk series) every second until stop.
type loadFleet struct {
	points atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

func startLoad(t *testing.T, ctx context.Context, pub bus.Publisher, topic string, n, size int) *loadFleet {
	ctx, cancel := context.WithCancel(ctx)
	l := &loadFleet{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			now := time.Now().UTC()
			msgs := make([]bus.Message, 0, n)
			for i := range n {
				node := fmt.Sprintf("load-%03d", i)
				pts := []metric.Point{cpu(10)}
				for k := 1; k < size; k++ {
					pts = append(pts, metric.Point{Name: "disk.used_pct", Value: 50, Labels: map[string]string{"mount": fmt.Sprintf("/m%02d", k)}})
				}
				data, err := metric.Encode(metric.Batch{Node: node, TS: now, IntervalS: 1, Points: pts})
				if err != nil {
					panic(err)
				}
				msgs = append(msgs, bus.Message{Topic: topic, Key: []byte(node), Value: data})
			}
			if err := pub.Publish(ctx, msgs...); err != nil {
				if ctx.Err() == nil {
					t.Errorf("publish the load: %v", err)
				}
				return
			}
			l.points.Add(int64(n * size))
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	t.Cleanup(l.stop)
	return l
}

func (l *loadFleet) stop() {
	l.cancel()
	<-l.done
}
