package loadmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// truth is a wave's true prices.
type truth struct{ row, byte, base, read float64 }

// wave simulates one wave's batches: instances with their own rates, row sizes and
// daily phases, each rate bursting on its own from minute to minute (log-normal, as
// binlog traffic does), the CPU the truth says, with relative Gaussian noise and a share
// of outliers (a GC storm: three times the CPU).
type wave struct {
	node     string
	cores    float64
	tr       truth
	rates    []float64 // rows/s at the daily mean
	sizes    []float64 // bytes per row
	reads    []float64 // binlog bytes read per byte published; nil: the agent reports no binlog read
	phases   []float64 // hours
	noise    float64
	outliers float64
	burst    float64 // σ of each rate's log-normal burstiness
	swing    float64 // the daily cycle's amplitude, a share of the mean rate
	extra    float64 // cores of other work in the process (a snapshot running)
	rng      *rand.Rand
}

func newWave(node string, tr truth, instances int, seed uint64) *wave {
	w := &wave{node: node, cores: 4, tr: tr, noise: 0.03, burst: 0.25, swing: 0.8, rng: rand.New(rand.NewPCG(seed, 1))}
	for range instances {
		w.rates = append(w.rates, 200+w.rng.Float64()*3000)
		w.sizes = append(w.sizes, 100+w.rng.Float64()*4000)
		w.phases = append(w.phases, w.rng.Float64()*24)
	}
	return w
}

// batch is the wave's batch at t.
func (w *wave) batch(t time.Time) metric.Batch {
	b := metric.Batch{Node: w.node, TS: t, IntervalS: 60}
	h := float64(t.Sub(t0)) / float64(time.Hour)
	var rows, bytes, read float64
	for i := range w.rates {
		r := w.rates[i] * (1 + w.swing*math.Sin(2*math.Pi*(h-w.phases[i])/24)) * math.Exp(w.burst*w.rng.NormFloat64())
		by := r * w.sizes[i]
		rows, bytes = rows+r, bytes+by
		l := map[string]string{"instance": fmt.Sprintf("i%d", i)}
		b.Points = append(b.Points, metric.Point{Name: metric.WaveTPS, Labels: l, Value: r},
			metric.Point{Name: metric.WaveBytesPerS, Labels: l, Value: by})
		if w.reads != nil {
			read += by * w.reads[i]
			b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Labels: l, Value: by * w.reads[i]})
		}
	}
	cpu := w.tr.row*rows + w.tr.byte*bytes + w.tr.read*read + w.tr.base + w.extra
	cpu *= 1 + w.noise*w.rng.NormFloat64()
	if w.rng.Float64() < w.outliers {
		cpu *= 3
	}
	b.Points = append(b.Points, metric.Point{Name: metric.WaveCPUCores, Value: max(cpu, 0)},
		metric.Point{Name: metric.CPUCores, Value: w.cores},
		metric.Point{Name: metric.WaveTPS, Value: rows}, metric.Point{Name: metric.WaveBytesPerS, Value: bytes})
	return b
}

// feed gives the model the wave's batches every 10 s (the agent's default interval)
// for span, ending at the clock.
func feed(m *Model, clk *time.Time, span time.Duration, ws ...*wave) {
	for t := *clk; t.Before(clk.Add(span)); t = t.Add(10 * time.Second) {
		for _, w := range ws {
			m.Observe(w.batch(t))
		}
	}
	*clk = clk.Add(span)
}

func within(t *testing.T, want, got, tol float64, what string) {
	t.Helper()
	require.InDelta(t, 1, got/want, tol, "%s: got %.4g, want %.4g", what, got, want)
}

// Known synthetic prices are recovered within 10 % from six hours of 10 s samples with
// up to 3 % CPU noise, also when 5 % of the samples are gross outliers (three times the
// CPU). With 5 % noise the statistical error alone reaches 10–20 % on the price of the
// smaller share (seen over 20 seeds: up to 7 % on rows, 19 % on bytes), so that case is
// held to 20 %; the cost of the wave's own mix stays within 5 % in every case.
func TestPricesRecovered(t *testing.T) {
	cases := []struct {
		name            string
		tr              truth
		noise, outliers float64
		tol             float64
	}{
		{"clean", truth{row: 2e-5, byte: 4e-9, base: 0.15}, 0.01, 0, 0.10},
		{"typical", truth{row: 2e-5, byte: 4e-9, base: 0.15}, 0.03, 0, 0.10},
		{"outliers", truth{row: 3e-5, byte: 5e-9, base: 0.3}, 0.03, 0.05, 0.10},
		{"byte-heavy", truth{row: 5e-6, byte: 1.2e-8, base: 0.05}, 0.03, 0.02, 0.10},
		{"noisy", truth{row: 2e-5, byte: 4e-9, base: 0.15}, 0.05, 0, 0.20},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := t0
			m := New(Options{Now: func() time.Time { return clk }})
			w := newWave("w", tc.tr, 12, uint64(i+1))
			w.noise, w.outliers = tc.noise, tc.outliers
			feed(m, &clk, 6*time.Hour, w)
			p := m.Prices("w")
			require.Equal(t, SourceFitted, p.Source)
			within(t, tc.tr.row, p.Row, tc.tol, "row price")
			within(t, tc.tr.byte, p.Byte, tc.tol, "byte price")
			var rows, bytes float64
			for k := range w.rates {
				rows, bytes = rows+w.rates[k], bytes+w.rates[k]*w.sizes[k]
			}
			within(t, tc.tr.row*rows+tc.tr.byte*bytes, p.Cost(rows, bytes, 0), 0.05, "the mix's cost")
			require.InDelta(t, tc.tr.base, p.Base, 0.02, "base, in cores")
			require.Equal(t, 2160, p.Samples+p.Saturated, "six hours at 10 s")
			cores, ok := m.Cores("w")
			require.True(t, ok)
			require.Equal(t, 4.0, cores)
		})
	}
}

// A wave with too little data of its own takes the fleet's pooled prices scaled by its
// speed (the one factor its few samples can fit: the mean CPU they show over what the
// fleet's prices and base predict), and says so; with no wave reporting its CPU there is
// no price at all.
func TestThinDataFallsBack(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	require.Equal(t, SourceNone, m.Prices("new").Source)

	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	a, b := newWave("a", tr, 10, 1), newWave("b", tr, 10, 2)
	feed(m, &clk, 6*time.Hour, a, b)
	thin := newWave("thin", truth{row: 4e-5, byte: 8e-9, base: 0.2}, 10, 3)
	feed(m, &clk, 50*time.Second, thin) // five samples
	p := m.Prices("thin")
	require.Equal(t, SourcePooled, p.Source)
	require.Equal(t, 5, p.Samples)
	require.Equal(t, "5 of the 30 samples a fit of its own needs: the fleet's prices at the wave's speed", p.PooledWhy)
	pp, ok := m.Pooled()
	row, byte := pp.Row, pp.Byte
	require.True(t, ok)
	within(t, tr.row, row, 0.10, "pooled row price")
	within(t, tr.byte, byte, 0.10, "pooled byte price")
	// thin's host is twice as slow as the fleet's: its prices twice the pooled ones, in
	// the pooled prices' proportion.
	within(t, 4e-5, p.Row, 0.15, "thin's row price, the pooled one scaled")
	within(t, 8e-9, p.Byte, 0.15, "thin's byte price, the pooled one scaled")
	within(t, p.Row/row, p.Byte/byte, 1e-9, "one factor on both prices")
	require.Greater(t, p.Base, 0.0, "the fleet's base, scaled")

	unseen := m.Prices("unseen")
	require.Equal(t, SourcePooled, unseen.Source, "a wave with no sample prices at the fleet's")
	require.Equal(t, 0, unseen.Samples)
	require.Equal(t, "no wave.cpu_cores samples of its own: the fleet's pooled prices, its speed unknown", unseen.PooledWhy)
	require.Empty(t, m.Prices("a").PooledWhy, "a fitted wave's prices need no why")
}

// A thin wave's speed is the median of its samples' CPU over what the fleet's prices
// predict: a GC storm in a few of them (three times the CPU) does not make its host look
// slower. By the mean CPU, two storms in twenty samples priced it 17 % dear.
func TestThinWaveSpeedIgnoresOutliers(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	feed(m, &clk, 6*time.Hour, newWave("a", tr, 10, 1), newWave("b", tr, 10, 2))
	thin := newWave("thin", truth{row: 4e-5, byte: 8e-9, base: 0.3}, 10, 8)
	thin.outliers, thin.cores = 0.1, 16  // storms below the cores: not left out as pegged
	feed(m, &clk, 200*time.Second, thin) // twenty samples
	stormy := 0
	for _, s := range m.nodes["thin"].samples {
		if s.cpu > 2*(4e-5*s.rows+8e-9*s.bytes+0.3) {
			stormy++
		}
	}
	require.Equal(t, 2, stormy, "the test's seed gives the thin wave two storms")
	p := m.Prices("thin")
	require.Equal(t, SourcePooled, p.Source)
	within(t, 4e-5, p.Row, 0.08, "thin's row price, the pooled one at its speed")
}

// Rows and bytes that always move together leave their split to the prior; the cost
// of the wave's own mix is still predicted.
func TestCollinearWorkStillPredictsItsMix(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	others := []*wave{newWave("a", tr, 10, 1), newWave("b", tr, 10, 2)}
	same := newWave("same", truth{row: 3e-5, byte: 6e-9, base: 0.1}, 8, 3)
	for i := range same.sizes {
		same.sizes[i], same.phases[i] = 500, 0 // one row size, one daily shape: bytes = 500 × rows
	}
	feed(m, &clk, 6*time.Hour, append(others, same)...)
	p := m.Prices("same")
	require.Equal(t, SourceFitted, p.Source)
	rows := 5000.0
	within(t, same.tr.row*rows+same.tr.byte*rows*500, p.Cost(rows, rows*500, 0), 0.05, "the mix's cost")
	require.Greater(t, p.Row, 0.0)
	require.Greater(t, p.Byte, 0.0)
}

// Replaying stored points builds the same samples as the batches did; a redelivered
// batch counts once.
func TestReplayMatchesObserve(t *testing.T) {
	clk := t0
	now := func() time.Time { return clk }
	live, replayed := New(Options{Now: now}), New(Options{Now: now})
	w := newWave("w", truth{row: 2e-5, byte: 4e-9, base: 0.15}, 6, 7)
	var pts []store.Point
	for t := t0; t.Before(t0.Add(2 * time.Hour)); t = t.Add(time.Minute) {
		b := w.batch(t)
		live.Observe(b)
		live.Observe(b) // redelivered
		for _, p := range b.Points {
			pts = append(pts, store.Point{Node: b.Node, Name: p.Name, Labels: p.Labels, TS: b.TS, Value: p.Value})
		}
	}
	clk = t0.Add(2 * time.Hour)
	for i := 0; i < len(pts); i += 7 { // chunks that split batches
		replayed.Replay(pts[i:min(i+7, len(pts))])
	}
	replayed.EndReplay()
	require.Equal(t, live.Prices("w"), replayed.Prices("w"))
	require.Equal(t, 120, live.Prices("w").Samples)
}

// Samples older than the window are forgotten.
func TestWindow(t *testing.T) {
	clk := t0
	m := New(Options{Window: time.Hour, Now: func() time.Time { return clk }})
	w := newWave("w", truth{row: 2e-5, byte: 4e-9, base: 0.15}, 4, 1)
	feed(m, &clk, 3*time.Hour, w)
	require.Equal(t, 360, m.Prices("w").Samples)
}

// A broken agent's NaN or negative values count as no work, not as poison.
func TestBadValuesCountAsNothing(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	for i := range 40 {
		clk = t0.Add(time.Duration(i) * time.Minute)
		m.Observe(metric.Batch{Node: "w", TS: clk, Points: []metric.Point{
			{Name: metric.WaveCPUCores, Value: math.NaN()},
			{Name: metric.WaveTPS, Labels: map[string]string{"instance": "a"}, Value: -5},
		}})
	}
	p := m.Prices("w")
	require.False(t, math.IsNaN(p.Row) || math.IsNaN(p.Byte) || math.IsNaN(p.Base))
}

// A wave whose CPU is pegged at its cores says only that its work costs at least that:
// such samples are left out, and a wave with nothing else prices its work at the
// fleet's prices instead of calling all its CPU an idle base (which made its instances
// look free to move, and the wave impossible to relieve).
func TestSaturatedSamplesAreLeftOut(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	feed(m, &clk, 6*time.Hour, newWave("a", tr, 10, 1), newWave("b", tr, 10, 2))
	pegged := newWave("pegged", tr, 10, 3)
	pegged.cores = 0.5 // far less than its work takes: every reading is capped
	for t := t0; t.Before(clk); t = t.Add(10 * time.Second) {
		b := pegged.batch(t)
		for i := range b.Points {
			if b.Points[i].Name == metric.WaveCPUCores {
				b.Points[i].Value = min(b.Points[i].Value, 0.5)
			}
		}
		m.Observe(b)
	}
	p := m.Prices("pegged")
	require.Equal(t, SourcePooled, p.Source)
	require.Less(t, p.Samples, 30, "a few readings below the cap, too few to fit")
	require.Equal(t, 2160, p.Samples+p.Saturated)
	within(t, tr.row, p.Row, 0.10, "the fleet's row price (its few readings below the cap at the fleet's speed)")
	require.Less(t, p.Base, 0.5, "not every core called an idle base")
}

// A wave whose host other programs peg (cpu.util at 100 %) while it uses a large part of
// the host's cores reads what the scheduler gives its process, less than its work asks,
// though under its host's cores: such samples are left out as saturated, as a reading at
// the cores is, and the prices come from the hours the host had room (fitted with them,
// the throttled hours priced the work low). A light wave on the same pegged host, which a
// scheduler gives all it asks, keeps every sample.
func TestHostPeggedSamplesAreLeftOut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cores    float64 // the host's, against the wave's 0.3–0.5 cores
		throttle float64 // what the scheduler gives the process of what it asks
		leftOut  bool
		wantPeg  bool
	}{
		{"a busy wave", 1, 0.6, true, true},
		{"a light wave", 8, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := t0
			m := New(Options{Now: func() time.Time { return clk }})
			tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
			w := newWave("beside", tr, 10, 5)
			w.swing, w.cores = 0.3, tc.cores
			pegged := 0
			for at := t0; at.Before(t0.Add(6 * time.Hour)); at = at.Add(10 * time.Second) {
				b := w.batch(at)
				util := 40.0
				if at.Sub(t0) >= 3*time.Hour { // the other programs' three hours
					util = 100
					for i := range b.Points {
						if b.Points[i].Name == metric.WaveCPUCores {
							b.Points[i].Value *= tc.throttle
						}
					}
					pegged++
				}
				b.Points = append(b.Points, metric.Point{Name: metric.CPUUtil, Value: util})
				m.Observe(b)
			}
			clk = t0.Add(6 * time.Hour)
			p := m.Prices("beside")
			if tc.leftOut {
				require.Equal(t, pegged, p.Saturated, "every reading of the pegged host left out")
			} else {
				require.Zero(t, p.Saturated, "a light process's readings all count")
			}
			within(t, tr.row, p.Row, 0.10, "the row price")
			require.Equal(t, tc.wantPeg, p.Pegged)
		})
	}
}

// A wave whose busy hours bring it near its cores: a reading at the cap is left out,
// but of the samples whose work brought it near, those whose noise fell low stay under
// the cap, and a fit to the readings alone comes out flat (the work too cheap, the base
// too dear). Chosen again by what the first fit predicts, the samples give the prices
// back within 10 %.
func TestNearCapReadingsDoNotBiasThePrices(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	w := newWave("near", tr, 12, 7)
	w.burst = 0.05
	var cpus []float64
	var batches []metric.Batch
	for at := t0; at.Before(t0.Add(6 * time.Hour)); at = at.Add(10 * time.Second) {
		b := w.batch(at)
		batches = append(batches, b)
		for _, p := range b.Points {
			if p.Name == metric.WaveCPUCores {
				cpus = append(cpus, p.Value)
			}
		}
	}
	// The cores at the 70th percentile of the readings: about a third reach the cap.
	sorted := slices.Sorted(slices.Values(cpus))
	cores := sorted[len(sorted)*7/10] / saturatedAt
	for _, b := range batches {
		for i := range b.Points {
			switch b.Points[i].Name {
			case metric.WaveCPUCores:
				b.Points[i].Value = min(b.Points[i].Value, cores)
			case metric.CPUCores:
				b.Points[i].Value = cores
			}
		}
		m.Observe(b)
	}
	clk = t0
	feed(m, &clk, 6*time.Hour, newWave("a", tr, 12, 8), newWave("b", tr, 12, 9))
	p := m.Prices("near")
	require.Greater(t, p.Saturated, 2160/4, "a quarter of the samples or more left out")
	within(t, tr.row, p.Row, 0.10, "row price")
	within(t, tr.byte, p.Byte, 0.10, "byte price")
	require.InDelta(t, tr.base, p.Base, 0.03, "base, in cores")
}

// The base a plan starts from is the one the wave's latest samples show, each sample
// the work and the CPU of one moment: when the process starts using 0.3 cores more than
// its work explains, BaseNow has it once most of its last half hour does, while the base fitted over six hours
// barely moves; when its latest readings are pegged at its cores, it says so and keeps
// the fitted base (a pegged reading's residual says nothing).
func TestBaseNowFollowsTheLatestSamples(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	a, b, w := newWave("a", tr, 10, 1), newWave("b", tr, 10, 2), newWave("w", tr, 10, 3)
	feed(m, &clk, 6*time.Hour, a, b, w)
	p := m.Prices("w")
	require.False(t, p.Pegged)
	require.InDelta(t, tr.base, p.BaseNow, 0.03, "the base now, as fitted")

	w.extra = 0.3
	feed(m, &clk, 20*time.Minute, a, b, w)
	p = m.Prices("w")
	require.False(t, p.Pegged)
	require.InDelta(t, tr.base+0.3, p.BaseNow, 0.03, "the latest samples' base")
	require.InDelta(t, tr.base, p.Base, 0.03, "six hours' base")

	w.extra = 0
	w.cores = 0.3 // its work now takes more than its cores: every reading capped
	for end := clk.Add(2 * time.Minute); clk.Before(end); clk = clk.Add(10 * time.Second) {
		bt := w.batch(clk)
		for i := range bt.Points {
			if bt.Points[i].Name == metric.WaveCPUCores {
				bt.Points[i].Value = min(bt.Points[i].Value, w.cores)
			}
		}
		m.Observe(bt)
	}
	p = m.Prices("w")
	require.True(t, p.Pegged, "the last readings at the cores")
	require.Equal(t, p.Base, p.BaseNow)
}

// The fleet's base, which a wave priced from the pool carries, is the idle process's:
// each wave's base at its own speed on the pooled prices, not what its mean CPU leaves
// of its work at the pooled prices alone, which calls a host's speed its idle process
// (on the fleet simulator's seed 2 that made a wave relieved of its instances look
// loaded still, and the plan moved more of them).
func TestPooledBaseIsTheIdleProcess(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	const base = 0.15
	var ws []*wave
	for i, speed := range []float64{0.8, 1.3, 1.4, 1.5, 2.2} {
		w := newWave(fmt.Sprintf("w%d", i), truth{row: speed * 2e-5, byte: speed * 4e-9, base: speed * base}, 40, uint64(i+1))
		w.cores = 32
		ws = append(ws, w)
	}
	feed(m, &clk, 6*time.Hour, ws...)
	_, ok := m.Pooled()
	require.True(t, ok)
	m.mu.Lock()
	got := m.pooled.base
	m.mu.Unlock()
	// The idle process at the pooled prices' speed (a host at those prices idles at it).
	pp, _ := m.Pooled()
	row := pp.Row
	within(t, base*row/2e-5, got, 0.10, "the pool's base")
}

// The pool's prices are the median host's: hosts that differ by speed price every row
// and byte alike dearer or cheaper, and the pool fits each wave's speed beside the
// prices. One price for all, fitted as if every wave's CPU moved alike with its work,
// came out at 0.7 of the median host's row price and no byte price at all on the fleet
// simulator's seed 2.
func TestPooledPricesAcrossSpeeds(t *testing.T) {
	m, _ := speedFleet()
	pp, ok := m.Pooled()
	row, byte := pp.Row, pp.Byte
	require.True(t, ok)
	within(t, 1.4*2e-5, row, 0.10, "the pool's row price, the median host's")
	within(t, 1.4*4e-9, byte, 0.20, "the pool's byte price, the median host's")
}

// A wave whose work barely moves over the window (its instances' cycles cancel out, and
// they do not burst) cannot tell the price of its work from its base: a flatter price
// and a higher base fit as well, and a move off it would be predicted to relieve it by
// too little. Its own fit's WorkErr says so, and the fleet's prices at its speed stand
// in, visibly; its neighbours, whose work moves and whose bytes cost each host its own
// (so that the pool misses them by more than their own fits do), keep their own.
func TestUncertainFitTakesThePoolAtItsSpeed(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	var ws []*wave
	for i, b := range []float64{0.4, 0.7, 1.4, 2.2} {
		ws = append(ws, newWave(fmt.Sprintf("w%d", i), truth{row: tr.row, byte: b * tr.byte, base: tr.base}, 12, uint64(i+21)))
	}
	const speed = 1.3
	flat := newWave("flat", truth{row: speed * tr.row, byte: speed * tr.byte, base: speed * tr.base}, 12, 29)
	flat.swing, flat.burst, flat.cores = 0.15, 0.05, 8
	flat.noise = 0.05
	feed(m, &clk, 6*time.Hour, append(ws, flat)...)

	for _, w := range ws {
		p := m.Prices(w.node)
		require.Equal(t, SourceFitted, p.Source, w.node)
		require.Less(t, p.WorkErr, m.pooled.err, w.node)
		require.Less(t, p.CostErr, p.WorkErr, "%s: the blend is known better than either part", w.node)
	}
	p := m.Prices("flat")
	require.Equal(t, SourcePooled, p.Source, "the flat wave's own fit is too uncertain")
	require.Greater(t, p.WorkErr, m.pooled.err)
	require.Contains(t, p.PooledWhy, "its own fit (work_err ")
	require.Contains(t, p.PooledWhy, ") weighs less than the fleet's prices at the wave's speed")
	var rows, bytes float64
	for k := range flat.rates {
		rows, bytes = rows+flat.rates[k], bytes+flat.rates[k]*flat.sizes[k]
	}
	want := flat.tr.row*rows + flat.tr.byte*bytes
	within(t, want, p.Cost(rows, bytes, 0), 0.10, "the flat wave's work at the pool's prices and its speed")

	// What it stands in for: the wave's own fit, on the same samples, misprices its work.
	ss, _ := m.nodes["flat"].plain(nil)
	pp, _ := m.Pooled()
	row, byte := pp.Row, pp.Byte
	own := fit(ss, [dims]float64{row, byte}, priorStrength)
	ownErr := math.Abs(own.price[0]*rows+own.price[1]*bytes-want) / want
	usedErr := math.Abs(p.Cost(rows, bytes, 0)-want) / want
	require.Greater(t, ownErr, usedErr, "own fit: row %.3g byte %.3g base %.3f, its work %.1f %% off; at the prices used %.1f %%",
		own.price[0], own.price[1], own.base, 100*ownErr, 100*usedErr)
	require.InDelta(t, p.WorkErr, own.workErr, 1e-12, "the prices say how uncertain the own fit they lean away from was")
}

// The pool's miss is learned from how far the waves' own fits stand from it beyond
// their own errors: nothing (the floor) on a fleet of alike hosts, whatever their
// speeds, where a wave then leans on the pool as soon as its own fit is known less than
// to 1 %; more on hosts whose bytes cost each its own, which a speed on the fleet's
// prices cannot wholly say (the speed meets each wave's mean CPU: the miss left is the
// work's share against the base's).
func TestPoolMissLearned(t *testing.T) {
	for _, c := range []struct {
		name   string
		bytes  []float64 // each host's byte price, a factor on the fleet's
		lo, hi float64   // the learned miss
	}{
		{"alike hosts", []float64{1, 1, 1, 1, 1, 1}, minPoolErr, minPoolErr},
		{"bytes dearer on some", []float64{0.4, 0.7, 1, 1, 1.4, 2.2}, 1.5 * minPoolErr, 0.25},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := t0
			m := New(Options{Now: func() time.Time { return clk }})
			var ws []*wave
			for i, b := range c.bytes {
				speed := 0.8 + 0.1*float64(i)
				ws = append(ws, newWave(fmt.Sprintf("w%d", i), truth{row: speed * 2e-5, byte: speed * b * 4e-9, base: speed * 0.15}, 12, uint64(i+41)))
			}
			feed(m, &clk, 6*time.Hour, ws...)
			for _, w := range ws {
				m.Prices(w.node) // every wave's own fit, for the next pooling to learn from
			}
			require.Equal(t, defaultPoolErr, m.pooled.err, "no own fit to learn from at the first pooling")
			clk = clk.Add(repoolEvery)
			m.Refit()
			for _, w := range ws {
				p := m.Prices(w.node)
				require.Greater(t, p.CostErr, 0.0, w.node)
				require.LessOrEqual(t, p.CostErr, min(p.WorkErr, m.pooled.err), "%s: the blend is known at least as well as either part", w.node)
			}
			require.GreaterOrEqual(t, m.pooled.err, c.lo)
			require.LessOrEqual(t, m.pooled.err, c.hi)
		})
	}
}

// Warm refits, ahead of the asks, what an ask would refit, and nothing else: the waves
// with samples since a fit warmAge old (and a wave never fitted). Its prices are the
// ones an ask at that moment fits, and an ask after it finds them as they are.
func TestWarmRefitsAheadOfTheAsks(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	var ws []*wave
	for i := range 3 {
		ws = append(ws, newWave(fmt.Sprintf("w%d", i), truth{row: 2e-5, byte: 4e-9, base: 0.15}, 8, uint64(i+1)))
	}
	feed(m, &clk, time.Hour, ws...)
	require.Equal(t, 3, m.Warm(), "never fitted: all three")
	require.Equal(t, 0, m.Warm(), "just fitted: none")
	first := m.Prices("w0")

	feed(m, &clk, warmAge-10*time.Second, ws[0], ws[1]) // new samples, but the fits are younger than warmAge
	require.Equal(t, 0, m.Warm())
	feed(m, &clk, 10*time.Second, ws[0], ws[1]) // now they are warmAge old; w2 has nothing new
	require.Equal(t, 2, m.Warm())
	warmed := m.Prices("w0")
	require.NotEqual(t, first, warmed, "refitted on the new samples")
	m.nodes["w0"].fittedAt = time.Time{} // what an ask fits now, on the same pool
	require.Equal(t, warmed, m.Prices("w0"))

	// The pool, fitted at the first Warm, is due at repoolEvery: within WarmEvery of it,
	// an ask still finds it as it was, and Warm fits it anew.
	feed(m, &clk, repoolEvery-WarmEvery-warmAge, ws...)
	p1, _ := m.Pooled()
	r1, b1 := p1.Row, p1.Byte
	m.Warm()
	p2, _ := m.Pooled()
	r2, b2 := p2.Row, p2.Byte
	require.NotEqual(t, [2]float64{r1, b1}, [2]float64{r2, b2}, "repooled ahead of the asks")
}

// Warm fits the pool without the model's lock, which a thousand waves' pool would hold
// for seconds (5.8 s on BenchmarkRefitFleet's), the agents' batches and every ask for
// prices waiting; it installs the new pool under the lock, as an ask would have fitted
// it. When the pool is due, the asks meanwhile find the pool in hand, not fitting it
// again; when it was never fitted (a judge just started, its samples restored), Warm
// fits it too, where its first wave's refit fitted it under the lock.
func TestWarmFitsThePoolWithoutTheLock(t *testing.T) {
	for _, cold := range []bool{true, false} {
		t.Run(map[bool]string{true: "never fitted", false: "due"}[cold], func(t *testing.T) {
			clk := t0
			m := New(Options{Now: func() time.Time { return clk }})
			var ws []*wave
			for i := range 4 {
				ws = append(ws, newWave(fmt.Sprintf("w%d", i), truth{row: (1 + 0.2*float64(i)) * 2e-5, byte: 4e-9, base: 0.15}, 8, uint64(i+5)))
			}
			feed(m, &clk, time.Hour, ws...)
			var before Prices
			if cold {
				require.True(t, m.pooled.at.IsZero(), "nothing asked yet")
			} else {
				m.Warm()
				feed(m, &clk, repoolEvery-WarmEvery, ws...)
				before, _ = m.Pooled()
			}

			fitted := 0
			poolFitted = func(got *Model) {
				if got != m {
					return
				}
				fitted++
				require.True(t, m.mu.TryLock(), "the pool fitted with the model's lock held")
				m.mu.Unlock()
				if !cold {
					inHand, ok := m.Pooled()
					require.True(t, ok)
					require.Equal(t, before, inHand, "an ask meanwhile finds the pool in hand")
					m.Observe(ws[0].batch(clk)) // the agents' batches go on
				}
			}
			t.Cleanup(func() { poolFitted = nil })
			m.Warm()
			require.Equal(t, 1, fitted, "Warm fitted the pool, once")
			warmed, ok := m.Pooled()
			require.True(t, ok)
			if !cold {
				require.NotEqual(t, before, warmed)
			}

			m.pooled.at = time.Time{} // what an ask fits now, on the same samples
			asked, _ := m.Pooled()
			require.InDelta(t, 1, warmed.Row/asked.Row, 1e-3)
			require.InDelta(t, 1, warmed.Byte/asked.Byte, 1e-3)
		})
	}
}

// A fleet whose every instance publishes the same bytes per row (150) moves rows and
// bytes together in every wave: the pooled samples price only their combined work. The
// pool is fitted in that one direction (marked PooledCollinear) rather than failing, so
// an idle wave (32 cores, its process's CPU alone, no work) is priced from it, at the
// cost the fleet's mix has. Before, the pooled fit came out (0, 0, false), cached for
// repoolEvery, and the idle wave stayed SourceNone. With one instance a wave bytes are
// exactly 150 × rows (the old fit was singular); with three, 150 × rows to the rounding
// of their sums (the old fit's split was the rounding's: all on rows).
func TestCollinearFleetPricesAnIdleWave(t *testing.T) {
	for _, instances := range []int{1, 3} {
		t.Run(fmt.Sprint(instances), func(t *testing.T) { collinearFleet(t, instances) })
	}
}

func collinearFleet(t *testing.T, instances int) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-4, byte: 0, base: 0.05} // the CPU follows rows; bytes = 150 × rows
	var ws []*wave
	for i := range 3 {
		w := newWave(fmt.Sprintf("w%d", i), tr, instances, uint64(i+31))
		for j := range w.sizes {
			w.sizes[j] = 150
		}
		w.cores = float64(int(4) << i)
		ws = append(ws, w)
	}
	idle := newWave("idle", truth{base: 0.05}, 0, 40)
	idle.cores = 32
	feed(m, &clk, time.Hour, append(ws, idle)...)

	pp, ok := m.Pooled()
	row, byte := pp.Row, pp.Byte
	require.True(t, ok, "the pool of collinear work")
	rows := 3000.0
	within(t, tr.row*rows, row*rows+byte*150*rows, 0.05, "the pool's cost of the fleet's mix")
	require.Greater(t, row, 0.0)
	require.Greater(t, byte, 0.0, "split between rows and bytes, not all on one")

	p := m.Prices("idle")
	require.Equal(t, SourcePooled, p.Source, "%+v", p)
	require.True(t, p.PooledCollinear)
	require.Empty(t, p.Unpriced)
	within(t, tr.row*rows, p.Cost(rows, 150*rows, 0), 0.10, "the idle wave's cost of the fleet's mix")
	within(t, tr.base, p.Base, 0.25, "the idle wave's base")
	for _, w := range ws {
		q := m.Prices(w.node)
		within(t, tr.row*rows, q.Cost(rows, 150*rows, 0), 0.10, w.node+"'s cost of the fleet's mix")
	}
}

// A fleet whose rows and bytes vary apart (TestPooledPricesAcrossSpeeds's) is pooled as
// before the collinear fit came: the same prices to the last bits (taken from the code
// before it, run with the speeds alternated to convergence: fitAtSpeeds), and not marked
// PooledCollinear.
func TestSeparablePoolUnchanged(t *testing.T) {
	m, ws := speedFleet()
	pp, ok := m.Pooled()
	row, byte := pp.Row, pp.Byte
	require.True(t, ok)
	t.Logf("pooled %.17g %.17g", row, byte)
	require.InDelta(t, 1, row/goldenSeparableRow, 1e-12, "the pool's row price")
	require.InDelta(t, 1, byte/goldenSeparableByte, 1e-12, "the pool's byte price")
	require.False(t, m.pooled.collinear)
	for _, w := range ws {
		require.False(t, m.Prices(w.node).PooledCollinear, w.node)
	}
}

// The pool's prices on TestSeparablePoolUnchanged's fleet before the collinear fit,
// with the speeds converged (three alternations gave 2.7753818040739545e-05 and
// 5.4306906492496229e-09).
const (
	goldenSeparableRow  = 2.776315977291212e-05
	goldenSeparableByte = 5.4261263775798906e-09
)

// A wave with no prices says why: waves report wave.cpu_cores, but their CPU never
// rose with their work, so the pool finds no cost of work; not "no wave reports
// wave.cpu_cores", which a fleet with no CPU at all still says.
func TestUnpricedSaysWhy(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	require.Equal(t, UnpricedNoCPU, m.Prices("new").Unpriced)

	// Work, but a CPU that falls as it rises (the prices ≥ 0 come out at 0).
	flat := newWave("flat", truth{row: -1e-5, base: 0.5}, 1, 51)
	idle := newWave("idle", truth{base: 0.06}, 0, 52)
	feed(m, &clk, 2*time.Minute, flat, idle)
	require.Equal(t, UnpricedFewSamples, m.Prices("idle").Unpriced)
	feed(m, &clk, time.Hour, flat, idle)
	m.Refit()
	p := m.Prices("idle")
	require.Equal(t, SourceNone, p.Source, "%+v", p)
	require.Equal(t, UnpricedNoPool, p.Unpriced)
}

// speedFleet is a model fed six hours of five 32-core waves whose hosts differ by speed
// (0.6 to 2.5: every price and base alike), their rows and bytes varying apart.
func speedFleet() (*Model, []*wave) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	var ws []*wave
	for i, speed := range []float64{0.6, 0.9, 1.4, 1.6, 2.5} {
		w := newWave(fmt.Sprintf("w%d", i), truth{row: speed * 2e-5, byte: speed * 4e-9, base: speed * 0.15}, 40, uint64(i+11))
		w.cores = 32
		ws = append(ws, w)
	}
	feed(m, &clk, 6*time.Hour, ws...)
	return m, ws
}

// A new wave that runs nothing yet, whose process idles at a third of the fleet's base,
// is priced at the fleet's prices, not a third of them: its idle CPU says nothing of what
// a row costs on it (an outside trial: 35 % under, and the plans overfilled it). Its base
// is still its own.
func TestAnIdleWaveIsPricedAtTheFleets(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	idle := newWave("idle", truth{row: tr.row, byte: tr.byte, base: 0.05}, 0, 9)
	feed(m, &clk, 2*time.Hour, newWave("a", tr, 10, 1), newWave("b", tr, 10, 2), newWave("c", tr, 10, 3), idle)
	p := m.Prices("idle")
	require.Equal(t, SourcePooled, p.Source)
	within(t, tr.row, p.Row, 0.10, "the fleet's row price")
	within(t, tr.byte, p.Byte, 0.10, "the fleet's byte price")
	require.InDelta(t, 0.05, p.BaseNow, 0.01, "its own base")
}

// A wave's fit made from its first few samples is made again once its samples have
// doubled, not only a minute later: a judge catching up fast served the fit of 7 samples
// for a minute while 150 came (the fleet planned in rows/s "for want of samples").
func TestAFitOfFewSamplesIsRefittedAsTheyGrow(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	w := newWave("w", truth{row: 2e-5, byte: 4e-9, base: 0.15}, 10, 1)
	at := t0.Add(-time.Hour)
	observe := func(n int) {
		for range n {
			m.Observe(w.batch(at))
			at = at.Add(10 * time.Second)
		}
	}
	observe(7)
	first := m.Prices("w")
	require.Equal(t, SourceNone, first.Source, "7 samples and no fleet: nothing to price from")
	require.Equal(t, 7, first.Samples)
	observe(150) // within the same minute of the judge's clock
	p := m.Prices("w")
	require.Equal(t, 157, p.Samples+p.Saturated, "refitted on the samples that came")
	require.Equal(t, SourceFitted, p.Source)
}

// Where the pooled fit finds no cost of work across the fleet but some waves' own fits
// do, a wave with no work of its own to price (new, or emptied) takes the median of those
// prices, and says so: it was left unpriced, so out of every plan, and a new wave took
// no share nor any failover (an outside trial: lightly loaded waves, whose CPU the pool
// found no cost in, each priced by its own fit).
func TestAnIdleWaveTakesTheOwnFitsWhenThePoolFindsNoCost(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	pos := newWave("pos", truth{row: 2e-5, byte: 4e-9, base: 0.15}, 10, 61)
	neg := newWave("neg", truth{row: -1e-4, base: 3}, 20, 62) // its CPU falls as its rows rise: it outweighs pos in the pool
	idle := newWave("idle", truth{base: 0.06}, 0, 63)
	feed(m, &clk, 2*time.Hour, pos, neg, idle)
	require.Equal(t, SourceNone, m.Prices("idle").Source, "no pool, and no own fit yet")
	require.Equal(t, SourceFitted, m.Prices("pos").Source) // a plan asks every wave's
	m.Prices("neg")
	feed(m, &clk, repoolEvery, pos, neg, idle) // the pool again, now that the waves have their own fits
	p := m.Prices("idle")
	require.Equal(t, SourcePooled, p.Source, "%+v", p)
	require.True(t, p.PooledFromFits)
	within(t, 2e-5, p.Row, 0.15, "the row price of the one own fit that found a cost")
	require.Empty(t, p.Unpriced)
}

// A wave whose CPU does not rise with its work (its own fit prices the work at nothing
// or less: work_err infinite, -1 in the API) takes the pool and says so in words that
// match the API's -1; it said "work_err +Inf" (an outside trial).
func TestFitThatCannotPriceItsWorkSaysSo(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	ws := alikeWaves(tr, 4, 12, 41)
	odd := newWave("odd", truth{row: -2e-5, byte: -4e-9, base: 2}, 12, 49)
	odd.cores = 8
	feed(m, &clk, 6*time.Hour, append(ws, odd)...)
	p := m.Prices("odd")
	require.Equal(t, SourcePooled, p.Source, "%+v", p)
	require.True(t, math.IsInf(p.WorkErr, 1), "%+v", p)
	require.NotContains(t, p.PooledWhy, "Inf")
	require.Contains(t, p.PooledWhy, "work_err -1")
}

// A wave relieved from a pegged start is priced from its first few samples at the fleet's
// prices times a speed, and those can say little of it when its work is light beside its
// base: its latest pegged readings, each a floor of what its work cost, hold that speed
// up (peggedFloorLocked). Here the slow host's idle process costs less than the fleet's
// base at its speed, so its light samples alone read it as half its speed.
func TestThinWaveKeepsItsPeggedFloor(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	fleet := alikeWaves(tr, 6, 10, 61)
	const speed = 2
	slow := newWave("slow", truth{row: speed * tr.row, byte: speed * tr.byte, base: 0.1}, 10, 69)
	slow.cores, slow.swing, slow.burst, slow.noise = 2, 0.05, 0.05, 0.01
	// Deeply pegged for two hours (4.4 cores of work at its own prices), then, after a
	// first relief, just over its cores (2.2) for a minute.
	slow.feedBeside(m, &clk, fleet, 10000, 500, 2*time.Hour)
	slow.feedBeside(m, &clk, fleet, 5000, 500, time.Minute)
	// Relieved: 0.06 cores of work at the fleet's prices, 0.12 at its own, beside its
	// base of 0.1 (the fleet's base at its speed would be 0.3).
	slow.feedBeside(m, &clk, fleet, 270, 500, 50*time.Second)
	p := m.Prices("slow")
	require.True(t, p.Thin, "%+v", p)
	require.Equal(t, 5, p.Samples, "the relieved samples alone count")
	// Its last pegged readings: 2 cores for 1.1 of work and the fleet's base of 0.15 at
	// the fleet's prices, at least 1.6 times the fleet's speed (its deeply pegged ones
	// say only 0.8); its light samples alone say about 1.05.
	pp, _ := m.Pooled()
	got := p.Row / pp.Row
	require.Greater(t, got, 0.75*speed, "the slow host's speed, as its row price over the fleet's")
	require.LessOrEqual(t, got, 1.05*speed, "a floor, not more")
}

// A thin wave whose work leads its CPU is priced at the speed its samples read, not at
// its pegged floor: each pegged reading is a floor of what its own work then cost at the
// host's true prices, and where the host's byte costs more than its speed says (the
// fleet simulator's hosts differ so) a floor read on large rows prices small ones dear.
// Here a host as fast as the fleet at rows, twice as dear for a byte, pegged on 8 KB
// rows (a floor of 1.5 times the fleet's speed), then relieved to 100-byte rows.
func TestThinWorkLedWaveReadsItsSpeed(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	tr := truth{row: 2e-5, byte: 4e-9, base: 0.15}
	fleet := alikeWaves(tr, 6, 10, 81)
	odd := newWave("odd", truth{row: tr.row, byte: 2 * tr.byte, base: tr.base}, 10, 89)
	odd.cores, odd.swing, odd.burst, odd.noise = 2, 0.05, 0.05, 0.01
	odd.feedBeside(m, &clk, fleet, 2400, 8000, 2*time.Hour) // 2.2 cores of work at its prices, 1.4 at the fleet's
	odd.feedBeside(m, &clk, fleet, 4800, 100, 50*time.Second)
	p := m.Prices("odd")
	require.True(t, p.Thin, "%+v", p)
	require.Equal(t, 5, p.Samples, "the relieved samples alone count")
	pp, _ := m.Pooled()
	got := p.Row / pp.Row
	require.InDelta(t, 1.0, got, 0.05, "the host's speed at rows, as its row price over the fleet's (its floor: 1.5)")
}

// feedBeside sets every instance of w to rate rows/s of size bytes and observes, every
// 10 s for span, the fleet's batches and w's, its CPU held at its cores (pegged).
func (w *wave) feedBeside(m *Model, clk *time.Time, fleet []*wave, rate, size float64, span time.Duration) {
	for k := range w.rates {
		w.rates[k], w.sizes[k] = rate, size
	}
	for end := clk.Add(span); clk.Before(end); {
		*clk = clk.Add(10 * time.Second)
		for _, f := range fleet {
			m.Observe(f.batch(*clk))
		}
		m.Observe(w.pegged(w.batch(*clk)))
	}
}

// pegged is b with the wave's own CPU reading held at its cores, as a host's is.
func (w *wave) pegged(b metric.Batch) metric.Batch {
	for i := range b.Points {
		if b.Points[i].Name == metric.WaveCPUCores && len(b.Points[i].Labels) == 0 {
			b.Points[i].Value = min(b.Points[i].Value, w.cores)
		}
	}
	return b
}

// alikeWaves are n waves w0…w(n-1) of the same prices, each with instances of its own
// (seeds seed, seed+1, …).
func alikeWaves(tr truth, n, instances int, seed uint64) []*wave {
	ws := make([]*wave, n)
	for i := range ws {
		ws[i] = newWave(fmt.Sprintf("w%d", i), tr, instances, seed+uint64(i))
	}
	return ws
}

// The pooled fit and its learned miss are the same to the last bit however often they
// are made: the waves go in in the order of their ids, not the map's (whose sums
// differed in their last bits from one run to the next, and plans broke near-ties
// either way).
func TestPoolIsTheSameEveryTime(t *testing.T) {
	clk := t0
	m := New(Options{Now: func() time.Time { return clk }})
	var ws []*wave
	for i := range 16 {
		speed := 0.7 + 0.05*float64(i)
		ws = append(ws, newWave(fmt.Sprintf("w%02d", i), truth{row: speed * 2e-5, byte: speed * 4e-9, base: speed * 0.15}, 6, uint64(i+7)))
	}
	feed(m, &clk, time.Hour, ws...)
	for _, w := range ws {
		m.Prices(w.node) // each wave's own fit, which the miss learns from
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	first, firstErr := m.poolInputLocked(), m.poolErrLocked()
	require.NotEmpty(t, first.pool)
	for range 20 {
		require.Equal(t, first, m.poolInputLocked())
		require.Equal(t, math.Float64bits(firstErr), math.Float64bits(m.poolErrLocked()))
	}
}
