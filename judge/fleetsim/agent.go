package fleetsim

import (
	"math"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// The simulated agents: what the agent of each wave host sends (agent/collector/host and
// agent/collector/wave), from the simulation's state at a tick.

// state is the simulated cluster: where each instance runs, when it last moved, and
// every wave's true load.
type state struct {
	f       *Fleet
	o       Options
	assign  []int
	movedAt []time.Time
	on      []map[int]bool // wave → the instances it runs
	// left is, per wave, the instances that ran there and moved away: the wave still
	// exports their rows and bytes counters (the wave forgets only an instance's lag,
	// positions and state when it stops leading it), so its agent reports them at 0.
	left []map[int]bool
	ls   []load
	// moves is every applied move in order: instance and destination wave.
	moves  [][2]int
	labels []map[string]string // per instance: {instance}
	runLbl []map[string]string // per instance: {instance, state: running}
}

func newState(f *Fleet, o Options) *state {
	s := &state{f: f, o: o, assign: slices.Clone(f.Initial), movedAt: make([]time.Time, len(f.Instances)),
		on: make([]map[int]bool, len(f.Waves)), left: make([]map[int]bool, len(f.Waves)), ls: loads(f, f.Initial)}
	for w := range f.Waves {
		s.on[w], s.left[w] = map[int]bool{}, map[int]bool{}
	}
	for i, w := range s.assign {
		s.on[w][i] = true
		id := f.Instances[i].ID
		s.labels = append(s.labels, map[string]string{"instance": id})
		s.runLbl = append(s.runLbl, map[string]string{"instance": id, "state": "running"})
	}
	return s
}

// move runs instance i on wave to from at.
func (s *state) move(i, to int, at time.Time) {
	from := s.assign[i]
	delete(s.on[from], i)
	s.left[from][i] = true
	s.on[to][i] = true
	delete(s.left[to], i)
	s.ls[from] = s.ls[from].minus(contrib(s.f.Waves[from], s.f.Instances[i]))
	s.ls[to] = s.ls[to].plus(contrib(s.f.Waves[to], s.f.Instances[i]))
	s.assign[i], s.movedAt[i] = to, at
	s.moves = append(s.moves, [2]int{i, to})
}

// Kinds of noise, so that each draw of a tick is independent of the others.
const (
	noiseRate = iota + 1
	noiseCPU
	_ // cpu.util's own, before it was the process's reading (kept: the kinds after it draw as they did)
	noiseLoad
	noiseMem
)

// batch is wave w's agent batch at t, interval apart from the previous.
func (s *state) batch(w int, t time.Time, interval time.Duration) metric.Batch {
	wave := s.f.Waves[w]
	tick := uint64(t.UnixNano())
	h := hourOf(t)
	insts := sortedKeys(s.on[w])
	reading := s.reading()
	perInst, perLeft, total := 3, 2, 10
	if reading {
		perInst, perLeft, total = 4, 3, 11
	}
	b := metric.Batch{Node: wave.Node, TS: t, IntervalS: interval.Seconds(),
		Points: make([]metric.Point, 0, total+perInst*len(insts)+perLeft*len(s.left[w]))}
	demand := wave.Idle
	var rows, bytes, read float64
	for _, i := range insts {
		in := s.f.Instances[i]
		j := s.o.RateJitter
		r := in.Rows * in.Diurnal(h) * math.Exp(j*gauss(s.o.Seed, noiseRate, uint64(i), tick)-j*j/2)
		by := r * in.RowBytes
		rd := by * in.ReadRatio // the binlog read with the rows, so it jitters with them
		rows, bytes, read = rows+r, bytes+by, read+rd
		demand += wave.RowPrice*r + wave.BytePrice*by + wave.ReadPrice*rd
		b.Points = append(b.Points,
			metric.Point{Name: metric.WaveTPS, Value: r, Labels: s.labels[i]},
			metric.Point{Name: metric.WaveBytesPerS, Value: by, Labels: s.labels[i]})
		if reading {
			b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Value: rd, Labels: s.labels[i]})
		}
		b.Points = append(b.Points, metric.Point{Name: metric.WaveInstanceRunning, Value: 1, Labels: s.runLbl[i]})
	}
	for _, i := range sortedKeys(s.left[w]) {
		b.Points = append(b.Points,
			metric.Point{Name: metric.WaveTPS, Value: 0, Labels: s.labels[i]},
			metric.Point{Name: metric.WaveBytesPerS, Value: 0, Labels: s.labels[i]})
		if reading { // the wave's read counter of a departed instance stays, as its others do
			b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Value: 0, Labels: s.labels[i]})
		}
	}
	cores := float64(wave.Cores)
	node := uint64(w)
	noisy := func(kind uint64, sigma float64) float64 {
		return max(0, demand*(1+sigma*gauss(s.o.Seed, kind, node, tick)))
	}
	// A host cannot use more than its cores, whatever the demand: an overloaded wave's
	// CPU figures saturate (its rates here do not: no back-pressure). The host's CPU is
	// the wave process's over the same interval, as both readings are taken together
	// (the simulated hosts run nothing else): a reading's noise is the demand's own
	// burst, which both see.
	cpu := min(cores, noisy(noiseCPU, s.o.CPUNoise))
	b.Points = append(b.Points,
		metric.Point{Name: metric.CPUCores, Value: cores},
		metric.Point{Name: metric.CPUUtil, Value: 100 * cpu / cores},
		metric.Point{Name: metric.WaveCPUCores, Value: cpu},
		metric.Point{Name: metric.Load1, Value: noisy(noiseLoad, 0.1)}, // runnable threads: the demand
		metric.Point{Name: metric.MemUsedPct, Value: min(100, max(0, 20+1.5*float64(len(insts))+2*gauss(s.o.Seed, noiseMem, node, tick)))},
		metric.Point{Name: metric.WaveInstances, Value: float64(len(insts))},
		metric.Point{Name: metric.WaveTPS, Value: rows},
		metric.Point{Name: metric.WaveBytesPerS, Value: bytes})
	if reading {
		b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Value: read})
	}
	return b
}

// reading says whether the fleet models reading the binlog, so that its agents report
// wave.binlog_bytes_per_s. Without a read price they report what they did before it was
// modelled, point for point: the existing benchmarks rest on those batches.
func (s *state) reading() bool { return s.o.ReadPrice > 0 }

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gauss is a standard normal draw that depends only on its arguments: the same seed
// gives the same noise whatever order the batches are built in.
func gauss(seed, kind, idx, tick uint64) float64 {
	h := splitmix(seed ^ splitmix(kind^splitmix(idx^splitmix(tick))))
	u1 := (float64(h>>11) + 0.5) / (1 << 53)
	u2 := float64(splitmix(h)>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// splitmix is SplitMix64's finaliser: a well-mixed 64-bit hash.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
