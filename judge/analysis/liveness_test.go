package analysis_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/store"
)

// TestLivenessIsTheNodesLiveness: Incremental.Liveness, which the judge's liveness check
// reads every 5 s, keeps what the wave.* series say as they change rather than copying
// them (as Nodes does); it must say what every node's series say (Node.Liveness) after
// anything the analysis goes through: batches with and without a time, late ones and
// redelivered ones, clocks ahead and behind, wave series that stop and are dropped at
// the hour, a replay, restored timings and forgotten nodes.
func TestLivenessIsTheNodesLiveness(t *testing.T) {
	start := time.Date(2026, 11, 29, 14, 0, 5, 0, time.UTC)
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			c := &clock{t: start}
			a, err := analysis.NewIncremental(analysis.IncrementalOptions{Now: c.Now, ForgetAfter: 3 * time.Hour})
			require.NoError(t, err)
			names := []string{"wave.tps", "wave.instances", "wave.cpu_cores", "cpu.util", "mem.used_pct"}
			point := func() metric.Point {
				p := metric.Point{Name: names[r.IntN(len(names))], Value: r.Float64()}
				if p.Name == "wave.tps" || (p.Name == "cpu.util" && r.IntN(2) == 0) {
					p.Labels = map[string]string{"instance": fmt.Sprint("db-", r.IntN(4))}
				}
				return p
			}
			// Cases the sequence must have gone through, so that the comparison means something.
			var sawHost, sawUntimedWave, sawTimedWave, sawWaveGone, sawForgotten bool
			wasWave := map[string]bool{} // by node: whether it had a wave when last listed
			listed := 0                  // nodes the last step listed
			for step := range 400 {
				switch op := r.IntN(20); {
				case op < 14: // a batch
					node := fmt.Sprint("node-", r.IntN(5))
					var ts time.Time
					switch k := r.IntN(10); {
					case k == 0: // no time
					case k == 1: // late: an earlier hour
						ts = c.Now().Add(-time.Duration(1+r.IntN(90)) * time.Minute)
					case k == 2: // a clock ahead of the judge's
						ts = c.Now().Add(time.Duration(1+r.IntN(120)) * time.Second)
					case k == 3 && step > 0: // a redelivery, or close to one
						ts = c.Now().Truncate(10 * time.Second)
					default:
						ts = c.Now().Add(-time.Duration(r.IntN(3000)) * time.Millisecond)
					}
					b := metric.Batch{Node: node, TS: ts, IntervalS: float64(10 * (1 + r.IntN(2)))}
					for range r.IntN(6) {
						b.Points = append(b.Points, point())
					}
					a.Observe(b)
				case op < 15: // a replay of a node's stored points
					node := fmt.Sprint("node-", r.IntN(5))
					var pts []store.Point
					ts := c.Now().Add(-time.Duration(r.IntN(7200)) * time.Second)
					for range 1 + r.IntN(8) {
						p := point()
						pts = append(pts, store.Point{Node: node, Name: p.Name, Labels: p.Labels, TS: ts, Value: p.Value})
						ts = ts.Add(time.Duration(r.IntN(20)) * time.Second)
					}
					sort.SliceStable(pts, func(i, j int) bool { return pts[i].TS.Before(pts[j].TS) })
					a.Replay(pts)
				case op < 16:
					a.Declare(fmt.Sprint("node-", r.IntN(5)), time.Duration(r.IntN(3))*10*time.Second, time.Duration(r.IntN(5)-2)*time.Second)
				}
				// The clock goes on: seconds, minutes, sometimes past the hour or hours.
				switch k := r.IntN(20); {
				case k == 0:
					c.Set(c.Now().Add(time.Duration(30+r.IntN(150)) * time.Minute))
				case k < 4:
					c.Set(c.Now().Add(time.Duration(r.IntN(20)) * time.Minute))
				default:
					c.Set(c.Now().Add(time.Duration(r.IntN(15)) * time.Second))
				}

				nodes := a.Nodes()
				if len(nodes) < listed {
					sawForgotten = true
				}
				listed = len(nodes)
				want := make([]analysis.Liveness, 0, len(nodes))
				for _, n := range nodes {
					l := n.Liveness()
					want = append(want, l)
					switch {
					case !l.Wave && len(n.Series) > 0:
						sawHost = true
					case l.Wave && l.WaveTS.IsZero():
						sawUntimedWave = true
					case l.Wave:
						sawTimedWave = true
					}
					if wasWave[n.Node] && !l.Wave {
						sawWaveGone = true
					}
					wasWave[n.Node] = l.Wave
				}
				require.Equal(t, want, a.Liveness(), "step %d", step)
			}
			require.True(t, sawHost && sawUntimedWave && sawTimedWave && sawWaveGone && sawForgotten,
				"host %v, untimed wave %v, timed wave %v, wave gone %v, forgotten %v",
				sawHost, sawUntimedWave, sawTimedWave, sawWaveGone, sawForgotten)
		})
	}
}
