package judge

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/api"
)

// silentFleet is a judge fed by two waves, wave-3 running "stock", and an agent-only
// host (an alarm's) for a minute, every 10 s; the clock is at the last round (t0+50s).
func silentFleet(t *testing.T) (*Judge, *clock) {
	t.Helper()
	j, c := newJudge(t, func(o *Options) { o.Rebalance = &RebalanceOptions{InstanceFloor: 50, MaxMoves: 5} })
	for k := range 6 {
		if k > 0 {
			c.Add(10 * time.Second)
		}
		silentRound(t, j, c.Now(), fullWaveBatch)
	}
	return j, c
}

// silentRound is one interval's batches: wave-1's and the alarm host's as ever, and
// wave-3's as wave3 makes them (nil: none, its host is down).
func silentRound(t *testing.T, j *Judge, ts time.Time, wave3 func(string, time.Time, float64, map[string]float64) metric.Batch) {
	t.Helper()
	for _, b := range []metric.Batch{
		fullWaveBatch("wave-1", ts, 40, map[string]float64{"orders": 300}),
		hostBatch("alarm-host", ts, 3),
	} {
		require.NoError(t, j.Ingest(b, sourceHTTP))
	}
	if wave3 != nil {
		require.NoError(t, j.Ingest(wave3("wave-3", ts, 50, map[string]float64{"stock": 100}), sourceHTTP))
	}
}

// hostOnly is what the agent of a host whose wave died sends: the host's figures, its
// scrape of the wave failing.
func hostOnly(node string, ts time.Time, _ float64, _ map[string]float64) metric.Batch {
	return hostBatch(node, ts, 2)
}

func getPlan(t *testing.T, j *Judge) api.RebalanceAnswer {
	t.Helper()
	r := do(t, j.Handler(), "GET", "/v1/rebalance", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var plan api.RebalanceAnswer
	require.NoError(t, json.Unmarshal(r.body, &plan))
	return plan
}

func getNode(t *testing.T, j *Judge, id string) nodeSummary {
	t.Helper()
	return getNodeDetail(t, j, id).nodeSummary
}

func getNodeDetail(t *testing.T, j *Judge, id string) nodeDetail {
	t.Helper()
	r := do(t, j.Handler(), "GET", "/v1/nodes/"+id, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var n nodeDetail
	require.NoError(t, json.Unmarshal(r.body, &n))
	return n
}

func instanceIDs(cs []api.InstanceCost) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Instance)
	}
	return out
}

func planWaveOf(t *testing.T, plan api.RebalanceAnswer, node string) api.WaveLoad {
	t.Helper()
	for _, w := range plan.Waves {
		if w.Node == node {
			return w
		}
	}
	t.Fatalf("%s is not among the plan's waves %+v", node, plan.Waves)
	return api.WaveLoad{}
}

func failovers(plan api.RebalanceAnswer) []string {
	var out []string
	for _, m := range plan.Moves {
		if m.Reason == api.ReasonFailover {
			out = append(out, m.Instance+" from "+m.From)
		}
	}
	return out
}

// TestAWaveIsDownWhenItsMetricsStop: a wave whose metrics stop while its host's batches
// go on (its process crashed, its agent lives) is down after the window a node that
// stops altogether is (placement.stale_intervals, 3 of its 10 s intervals), and
// GET /v1/rebalance fails its instances over, each wave saying why it is down; until
// then, and while it reports, it is alive. The silent wave stayed alive, its
// instances planned nowhere.
func TestAWaveIsDownWhenItsMetricsStop(t *testing.T) {
	waveLast := t0.Add(50 * time.Second)
	for _, tc := range []struct {
		name     string
		wave3    func(string, time.Time, float64, map[string]float64) metric.Batch
		nodeLive bool
		down     string
		note     string
		status   string // its state on the status page
		instance string // its instance's state there
	}{
		{"its metrics stop, its host's go on", hostOnly, true, api.WaveDownSilent,
			"the wave's metrics stopped at 2026-11-29T14:10:50Z while the host reports (last batch 2026-11-29T14:11:20Z)",
			`<td class="stale">wave down<br><small>wave_silent: the wave&#39;s metrics stopped at 2026-11-29T14:10:50Z while the host reports`,
			`<td class="stale">not reported</td><td></td><td><small>the wave stopped reporting; it last said running</small>`},
		// The row said only "stale", and its instance "running".
		{"its node stops", nil, false, api.WaveDownNodeStale, "the node's batches stopped at 2026-11-29T14:10:50Z",
			`<td class="stale">stale<br><small>node_stale: the node&#39;s batches stopped at 2026-11-29T14:10:50Z</small></td>`,
			`<td class="stale">not reported</td><td></td><td><small>the node stopped reporting; it last said running</small>`},
		{"it reports", fullWaveBatch, true, "", "", `<td class="live">live</td>`, `<td class="live">running</td>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, c := silentFleet(t)
			for range 3 {
				c.Add(10 * time.Second)
				silentRound(t, j, c.Now(), tc.wave3)
			}
			// 30 s after the wave's last metrics: within the window, alive.
			plan := getPlan(t, j)
			require.True(t, planWaveOf(t, plan, "wave-3").Alive)
			require.Empty(t, failovers(plan))

			c.Add(time.Second)
			plan = getPlan(t, j)
			w := planWaveOf(t, plan, "wave-3")
			require.Equal(t, tc.down == "", w.Alive)
			require.Equal(t, tc.down, w.Down)
			require.Equal(t, tc.note, w.DownNote)
			n := getNode(t, j, "wave-3")
			require.Equal(t, tc.nodeLive, n.Live)
			require.NotNil(t, n.Wave)
			require.Equal(t, api.WaveStatus{Live: tc.down == "", LastSeen: n.Wave.LastSeen, Down: tc.down, DownNote: tc.note}, *n.Wave)
			page := string(do(t, j.Handler(), "GET", "/", "", nil).body)
			require.Contains(t, page, "<tr><td>wave-3</td>"+tc.status)
			// Its instance reads as the row does, the moment the wave is down.
			require.Contains(t, page, "<tr><td>wave-3</td><td>stock</td>"+tc.instance)
			if tc.down == "" {
				require.Empty(t, failovers(plan))
				return
			}
			require.Equal(t, waveLast, n.Wave.LastSeen)
			require.Equal(t, []string{"stock from wave-3"}, failovers(plan))
			// A balancer that still has it alive (its session lives) is told it is down
			// in the judge's view, and the plan leaves it out: its instance stays,
			// nothing goes to it (the answer said nothing, and moved instances onto it).
			var waves, insts []string
			for _, pw := range plan.Waves {
				waves = append(waves, fmt.Sprintf(`{"node":%q,"alive":true}`, pw.Node))
			}
			insts = append(insts, `{"id":"stock","node":"wave-3"}`)
			r, post := postRebalance(t, j, "", `{"waves":[`+strings.Join(waves, ",")+`],"instances":[`+strings.Join(insts, ",")+`]}`)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			pw := planWaveOf(t, post, "wave-3")
			require.True(t, pw.Alive)
			require.Equal(t, tc.down, pw.Down)
			require.Equal(t, tc.note, pw.DownNote)
			require.Equal(t, "no recent figures", pw.LeftOut)
			require.Contains(t, post.ModelNote, "left out of the plan (their instances stay, they take none): no recent figures from wave-3")
			for _, m := range post.Moves {
				require.NotEqual(t, "wave-3", m.To, "%+v", m)
				require.NotEqual(t, "wave-3", m.From, "%+v", m)
			}
			require.Empty(t, planWaveOf(t, post, "wave-1").Down)
			require.Equal(t, 1, w.Instances)
			require.Zero(t, w.InstancesAfter)
			// The node's detail lists what the plan fails over, as of the wave's last
			// report, for as long as the wave is down: it listed none of a silent
			// wave's once the host's batches had gone on without its series for 3
			// intervals, while the plan moved it.
			for range 3 {
				d := getNodeDetail(t, j, "wave-3")
				require.Equal(t, []string{"stock"}, instanceIDs(d.Instances))
				require.Equal(t, &waveLast, d.InstancesAsOf)
				require.Equal(t, []string{"stock from wave-3"}, failovers(getPlan(t, j)))
				c.Add(10 * time.Second)
				silentRound(t, j, c.Now(), tc.wave3)
			}
		})
	}
}

// TestASilentWaveIsLiveAgainWhenItsMetricsResume: once its agent scrapes the wave
// again, the wave is alive, in the plan and the node's listing, and nothing of it fails
// over.
func TestASilentWaveIsLiveAgainWhenItsMetricsResume(t *testing.T) {
	j, c := silentFleet(t)
	for range 4 {
		c.Add(10 * time.Second)
		silentRound(t, j, c.Now(), hostOnly)
	}
	require.Equal(t, api.WaveDownSilent, planWaveOf(t, getPlan(t, j), "wave-3").Down)

	c.Add(10 * time.Second)
	silentRound(t, j, c.Now(), fullWaveBatch)
	plan := getPlan(t, j)
	w := planWaveOf(t, plan, "wave-3")
	require.True(t, w.Alive)
	require.Empty(t, w.Down)
	require.Equal(t, 1, w.Instances)
	require.Empty(t, failovers(plan))
	require.Equal(t, api.WaveStatus{Live: true, LastSeen: c.Now()}, *getNode(t, j, "wave-3").Wave)
}

// TestAnAgentOnlyHostIsNoWave: a host whose agent never reported a wave's metrics (the
// judge's, the alarm's) is no wave of the plan, live or stale, and its node listing has
// no wave, whatever the waves beside it do.
func TestAnAgentOnlyHostIsNoWave(t *testing.T) {
	j, c := silentFleet(t)
	for range 4 {
		c.Add(10 * time.Second)
		silentRound(t, j, c.Now(), hostOnly)
	}
	check := func(live bool) {
		t.Helper()
		plan := getPlan(t, j)
		for _, w := range plan.Waves {
			require.NotEqual(t, "alarm-host", w.Node)
		}
		for _, m := range plan.Moves {
			require.NotEqual(t, "alarm-host", m.From)
			require.NotEqual(t, "alarm-host", m.To)
		}
		n := getNode(t, j, "alarm-host")
		require.Equal(t, live, n.Live)
		require.Nil(t, n.Wave)
	}
	check(true)
	c.Add(time.Minute) // every node silent
	check(false)
}

// TestAWaveSilentSinceBeforeTheHourFailsOverAfterIt: the judge's hour restarts every
// series at xx:00, carrying its level; a wave that went down in the hour's last
// intervals, its metrics or its whole node, has its instances failed over after xx:00
// all the same. They were failed over by nobody: its levels carried, it ran no
// instance in the judge's view.
func TestAWaveSilentSinceBeforeTheHourFailsOverAfterIt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wave3 func(string, time.Time, float64, map[string]float64) metric.Batch
		down  string
	}{
		{"its metrics stop", hostOnly, api.WaveDownSilent},
		{"its node stops", nil, api.WaveDownNodeStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, c := silentFleet(t)
			c.Add(49 * time.Minute) // 14:59:50, wave-3's last metrics
			silentRound(t, j, c.Now(), fullWaveBatch)
			for range 5 {
				c.Add(10 * time.Second)
				silentRound(t, j, c.Now(), tc.wave3)
			}
			plan := getPlan(t, j)
			require.Equal(t, tc.down, planWaveOf(t, plan, "wave-3").Down)
			require.Equal(t, []string{"stock from wave-3"}, failovers(plan))
		})
	}
}

// TestAnInstanceTheClusterFailedOverIsNotFailedOverAgain: the waves' own balancer fails
// a silent wave's instances over by the coordinator's membership; once the wave it
// went to reports it, the plan has it there, not on the silent wave to fail over.
func TestAnInstanceTheClusterFailedOverIsNotFailedOverAgain(t *testing.T) {
	j, c := silentFleet(t)
	for range 4 {
		c.Add(10 * time.Second)
		silentRound(t, j, c.Now(), hostOnly)
		// wave-1 runs stock now too: its batch a second after the round's.
		b := fullWaveBatch("wave-1", c.Now().Add(time.Second), 40, map[string]float64{"orders": 300, "stock": 100})
		require.NoError(t, j.Ingest(b, sourceHTTP))
	}
	plan := getPlan(t, j)
	require.Equal(t, api.WaveDownSilent, planWaveOf(t, plan, "wave-3").Down)
	require.Zero(t, planWaveOf(t, plan, "wave-3").Instances)
	require.Equal(t, 2, planWaveOf(t, plan, "wave-1").Instances)
	require.Empty(t, failovers(plan))
	// The nodes' details agree: the silent wave's last report is not the instance's
	// place once another wave runs it.
	require.Empty(t, getNodeDetail(t, j, "wave-3").Instances)
	require.Equal(t, []string{"orders", "stock"}, instanceIDs(getNodeDetail(t, j, "wave-1").Instances))
	// So does the status page: stock once, on wave-1 (it was listed on both).
	page := string(do(t, j.Handler(), "GET", "/", "", nil).body)
	require.Equal(t, 1, strings.Count(page, "<td>stock</td>"), page)
	require.Contains(t, page, "<tr><td>wave-1</td><td>stock</td>")
}

// TestADownWavesLastSeenStaysPut: the agent's batches reach the judge a few
// milliseconds late, by a little more or less each time. A silent wave's last_seen is
// its last sample put on the judge's clock, which no later batch moves: it jittered by
// each batch's delivery (the node's offset re-estimated per batch), read after read.
func TestADownWavesLastSeenStaysPut(t *testing.T) {
	j, c := silentFleet(t) // wave-3's last metrics at t0+50s, delivered at once
	var seen []time.Time
	for k := range 6 {
		c.Add(10 * time.Second)
		silentRound(t, j, c.Now(), nil)
		late := time.Duration(3+7*k) * time.Millisecond
		require.NoError(t, j.Ingest(hostOnly("wave-3", c.Now().Add(-late), 0, nil), sourceHTTP))
		if w := getNode(t, j, "wave-3").Wave; !w.Live {
			seen = append(seen, w.LastSeen)
		}
	}
	require.Len(t, seen, 3) // down from the 4th round on
	for _, s := range seen {
		require.Equal(t, t0.Add(50*time.Second), s)
	}
}

// TestWaveLivenessChangesAreLogged: the judge's log said nothing while a wave went
// silent, its node stale and back (outside trial). Each change is one line, however
// often the judge checks: a warning with the reason and the note when the wave goes
// down or is down for another reason, a line with how long it was down when it is live
// again. The agent-only host, stale at the end, is never logged as a wave.
func TestWaveLivenessChangesAreLogged(t *testing.T) {
	var log testenv.SyncBuffer
	j, c := newJudge(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{} // the wall clock's; the lines are compared whole
				}
				return a
			}}))
	})
	rounds := func(k int, wave3 func(string, time.Time, float64, map[string]float64) metric.Batch) {
		for range k {
			c.Add(10 * time.Second)
			silentRound(t, j, c.Now(), wave3)
			j.checkWaves()
			j.checkWaves() // a second check between batches changes nothing
		}
	}
	silentRound(t, j, c.Now(), fullWaveBatch)
	rounds(5, fullWaveBatch) // wave-3's last metrics at t0+50s
	require.Empty(t, log.String(), "no change yet")

	rounds(4, hostOnly) // down at t0+81s, seen at t0+90s
	rounds(4, nil)      // its node's last batch at t0+90s, stale from t0+121s
	rounds(1, fullWaveBatch)
	c.Add(2 * time.Minute) // every node stale
	j.checkWaves()
	c.Add(10 * time.Second)
	silentRound(t, j, c.Now(), fullWaveBatch) // all back, alarm-host too
	j.checkWaves()

	require.Equal(t, []string{
		`level=WARN msg="wave down" component=judge node=wave-3 reason=wave_silent note="the wave's metrics stopped at 2026-11-29T14:10:50Z while the host reports (last batch 2026-11-29T14:11:30Z)"`,
		`level=WARN msg="wave down" component=judge node=wave-3 reason=node_stale note="the node's batches stopped at 2026-11-29T14:11:30Z"`,
		`level=INFO msg="wave live again" component=judge node=wave-3 down_for=50s`,
		`level=WARN msg="wave down" component=judge node=wave-1 reason=node_stale note="the node's batches stopped at 2026-11-29T14:12:20Z"`,
		`level=WARN msg="wave down" component=judge node=wave-3 reason=node_stale note="the node's batches stopped at 2026-11-29T14:12:20Z"`,
		`level=INFO msg="wave live again" component=judge node=wave-1 down_for=10s`,
		`level=INFO msg="wave live again" component=judge node=wave-3 down_for=10s`,
	}, strings.Split(strings.TrimSpace(log.String()), "\n"))
}
