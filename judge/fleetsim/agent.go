package fleetsim

import (
	"cmp"
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
	// on is, per wave, the instances it runs. A wave reports nothing of an instance
	// that moved away: its runner's end deletes the instance's series, counters too
	// (wave/metrics.go, drop), so the agent's next scrape has none of it.
	on []map[int]bool
	ls []load
	// moves is every applied move in order: instance and destination wave.
	moves  [][2]int
	labels []map[string]string // per instance: {instance}
	runLbl []map[string]string // per instance: {instance, state: running}
	// hosts is each wave's host-mates with itself (hostsOf; nil: a host of its own), and
	// bootLbl each wave's host.info labels.
	hosts   [][]int
	bootLbl []map[string]string
}

func newState(f *Fleet, o Options) *state {
	s := &state{f: f, o: o, assign: slices.Clone(f.Initial), movedAt: make([]time.Time, len(f.Instances)),
		on: make([]map[int]bool, len(f.Waves)), ls: loads(f, f.Initial),
		hosts: hostsOf(f), bootLbl: make([]map[string]string, len(f.Waves))}
	for w, wave := range f.Waves {
		s.on[w] = map[int]bool{}
		if wave.Host != "" {
			s.bootLbl[w] = map[string]string{"boot_id": wave.Host}
		}
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
	s.on[to][i] = true
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
	perInst, total := 3, 10
	if reading {
		perInst, total = 4, 11
	}
	b := metric.Batch{Node: wave.Node, TS: t, IntervalS: interval.Seconds(),
		Points: make([]metric.Point, 0, total+perInst*len(insts))}
	demand, rows, bytes, read := s.work(w, insts, h, tick, func(i int, r, by, rd float64) {
		b.Points = append(b.Points,
			metric.Point{Name: metric.WaveTPS, Value: r, Labels: s.labels[i]},
			metric.Point{Name: metric.WaveBytesPerS, Value: by, Labels: s.labels[i]})
		if reading {
			b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Value: rd, Labels: s.labels[i]})
		}
		b.Points = append(b.Points, metric.Point{Name: metric.WaveInstanceRunning, Value: 1, Labels: s.runLbl[i]})
	})
	cores := float64(wave.Cores)
	// A host cannot use more than its cores, whatever the demand: an overloaded wave's
	// CPU figures saturate (its rates here do not: no back-pressure). The host's CPU is
	// the wave process's over the same interval, as both readings are taken together
	// (a simulated host of its own runs nothing else): a reading's noise is the demand's
	// own burst, which both see.
	own := s.noisy(demand, noiseCPU, s.o.CPUNoise, w, tick)
	host, hostDemand := own, demand
	if mates := s.hosts[w]; mates != nil {
		// A shared host: every agent on it reports the host's cores and CPU (its
		// waves' processes and its other work) and its boot id; a process can use
		// more than its share of the cores while its host-mates leave them idle.
		cores, host, hostDemand = 0, 0, 0
		asks := make([]float64, 0, len(mates)+1) // the host's programs: its waves', and its other work
		other, at := 0.0, 0
		for k, m := range mates {
			mw := s.f.Waves[m]
			d, r := demand, own
			if m != w {
				d, _, _, _ = s.work(m, sortedKeys(s.on[m]), h, tick, nil)
				r = s.noisy(d, noiseCPU, s.o.CPUNoise, m, tick)
			} else {
				at = k
			}
			cores += float64(mw.Cores)
			asks = append(asks, r)
			other += mw.Other
			hostDemand += d + mw.Other
		}
		got := fairShares(append(asks, other), cores)
		own = got[at]
		for _, g := range got {
			host += g
		}
		b.Points = append(b.Points, metric.Point{Name: metric.HostInfo, Value: 1, Labels: s.bootLbl[w]})
	}
	cpu := min(cores, own)
	host = min(cores, host)
	b.Points = append(b.Points,
		metric.Point{Name: metric.CPUCores, Value: cores},
		metric.Point{Name: metric.CPUUtil, Value: 100 * host / cores},
		metric.Point{Name: metric.WaveCPUCores, Value: cpu},
		metric.Point{Name: metric.Load1, Value: s.noisy(hostDemand, noiseLoad, 0.1, w, tick)}, // runnable threads: the demand
		metric.Point{Name: metric.MemUsedPct, Value: min(100, max(0, 20+1.5*float64(len(insts))+2*gauss(s.o.Seed, noiseMem, uint64(w), tick)))},
		metric.Point{Name: metric.WaveInstances, Value: float64(len(insts))},
		metric.Point{Name: metric.WaveTPS, Value: rows},
		metric.Point{Name: metric.WaveBytesPerS, Value: bytes})
	if reading {
		b.Points = append(b.Points, metric.Point{Name: metric.WaveBinlogBytesPerS, Value: read})
	}
	return b
}

// fairShares is what each program of a host gets of its cores when they ask for asks:
// all it asks while the host has room, else max-min fair shares (the scheduler's): a
// program that asks less than an equal part of what is left gets all of it, the others
// share the rest equally. A light process on a pegged host is not slowed; a busy one
// reads what it got, a floor of what its work asks.
func fairShares(asks []float64, cores float64) []float64 {
	got := slices.Clone(asks)
	total := 0.0
	for _, a := range asks {
		total += a
	}
	if total <= cores {
		return got
	}
	order := make([]int, len(asks))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(asks[a], asks[b]) })
	left := cores
	for k, i := range order {
		equal := left / float64(len(order)-k)
		got[i] = min(asks[i], equal)
		left -= got[i]
	}
	return got
}

// work is what wave w's process uses at tick (UTC hour h) for insts, its instances:
// its demand in cores, and the rows, bytes and binlog bytes per second they publish and
// read in all; each instance's own figures go to each, when given.
func (s *state) work(w int, insts []int, h float64, tick uint64, each func(i int, rows, bytes, read float64)) (demand, rows, bytes, read float64) {
	wave := s.f.Waves[w]
	demand = wave.Idle
	for _, i := range insts {
		in := s.f.Instances[i]
		j := s.o.RateJitter
		r := in.Rows * in.Diurnal(h) * math.Exp(j*gauss(s.o.Seed, noiseRate, uint64(i), tick)-j*j/2)
		by := r * in.RowBytes
		rd := by * in.ReadRatio // the binlog read with the rows, so it jitters with them
		rows, bytes, read = rows+r, bytes+by, read+rd
		demand += wave.RowPrice*r + wave.BytePrice*by + wave.ReadPrice*rd
		if each != nil {
			each(i, r, by, rd)
		}
	}
	return demand, rows, bytes, read
}

// noisy is a reading of demand with its noise of kind, relative sigma, for wave w's
// agent at tick; never below 0.
func (s *state) noisy(demand float64, kind uint64, sigma float64, w int, tick uint64) float64 {
	return max(0, demand*(1+sigma*gauss(s.o.Seed, kind, uint64(w), tick)))
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
