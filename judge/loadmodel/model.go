// Package loadmodel learns what work costs each wave: from the batches a wave's agent
// sends (the wave process's CPU, wave.cpu_cores, beside the rows and bytes it published,
// wave.tps and wave.bytes_per_s per instance, and the binlog each instance read,
// wave.binlog_bytes_per_s) it fits, per wave and over a window of the current hour and
// its history, the prices of a row, of a byte published and of a binlog byte read in
// CPU cores and the base the process costs with no work:
//
//	wave.cpu_cores ≈ row·Σ rows/s + byte·Σ bytes/s + read·Σ binlog bytes/s + base
//
// An instance reads its source's whole binlog, whatever its filters publish, so one that
// publishes a few tables of a busy server costs its wave the reading of all of it: the
// third price is what tells it from an instance that publishes what it reads. A wave
// whose agent reports no binlog read (an older agent) is priced as before, by rows and
// bytes: its read price is held at the fleet's, and it reads nothing.
//
// An instance's cost on a wave is then its own rows, bytes and binlog at that wave's prices,
// and a move's effect on its destination is predicted at the destination's prices. A
// wave's capacity is its host's cores (cpu.cores). The fit is robust (Huber's weights)
// and pulled towards the fleet's pooled prices, which stand in, visibly, for a wave whose
// own samples are too few or too alike to price its work.
package loadmodel

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// Sources of a wave's prices.
const (
	// SourceFitted: fitted to the wave's own samples.
	SourceFitted = "fitted"
	// SourcePooled: too few or too alike samples of its own, or samples that leave the
	// price of its work uncertain (Prices.WorkErr); the fleet's pooled prices at the
	// wave's speed (alone, or weighing more than its own fit).
	SourcePooled = "pooled"
	// SourceNone: no price in cores at all (Prices.Unpriced says why).
	SourceNone = "none"
)

// Why a wave has no prices (Prices.Unpriced).
const (
	// UnpricedNoCPU: no wave has reported its CPU over the window, this one neither.
	UnpricedNoCPU = "no wave reports wave.cpu_cores"
	// UnpricedFewSamples: waves report their CPU, but none has enough samples yet to
	// fit a price from (this one too few, or its work never varied).
	UnpricedFewSamples = "no wave has enough wave.cpu_cores samples yet to fit prices from (this one: too few, or its work has not varied)"
	// UnpricedNoPool: waves report their CPU, but the fleet's pooled fit found no cost
	// of work (no wave's CPU moved with its rows or bytes), nor did any wave's own fit
	// (ownFitsMedianLocked), and this wave's own work never varied enough to fit.
	UnpricedNoPool = "waves report wave.cpu_cores, but the fleet's pooled fit found no cost of work in them and this wave's own work has not varied enough to fit"
)

// Prices are one wave's fitted costs, in CPU cores.
type Prices struct {
	Row  float64 // cores per row/s
	Byte float64 // cores per byte/s published
	Read float64 // cores per binlog byte/s read
	Base float64 // cores the wave process uses with no work
	// Source says where the prices come from (SourceFitted, SourcePooled, SourceNone);
	// Samples how many of the wave's own samples the window held; R2 and RMSE how well
	// its own fit explains them (the scatter of its CPU about its work, which plans take
	// as the error of their predictions), or with too few or too alike samples the pooled
	// prices do (0 without samples).
	Source  string
	Samples int
	R2      float64
	RMSE    float64
	// Saturated is how many samples were left out because the wave's CPU was pegged at
	// its cores (a reading that is only a floor of the work's cost), or near enough to
	// them by its prices that its reading stayed under only when its noise fell low
	// (plain).
	Saturated int
	// WorkErr is the standard error of the wave's own fit's cost of its mean work, as a
	// share of that cost (0 when no fit of its own was tried): the prices are the own
	// fit and the fleet's at the wave's speed, weighed by 1/WorkErr² and 1/err², err the
	// pool's learned miss (ownFit, poolErrLocked); Source is "pooled" when the pool
	// weighs more.
	WorkErr float64
	// CostErr is the share by which these prices may miss the cost of the wave's work:
	// the blend's (1/√(1/WorkErr² + 1/err²)), or the pool's miss where the pool alone
	// prices the wave (0: not known).
	CostErr float64
	// BaseNow is the base as the wave's latest samples show it: the median of what
	// these prices leave unexplained of each (its CPU minus its work's cost), over the
	// last thirty minutes (at least the last five samples). Each sample holds the work and
	// the CPU of one moment, so BaseNow does not lag a move as a smoothed level does,
	// and it absorbs the prices' error at the wave's present work, which a prediction
	// then carries only on the work that moves. Base when no recent sample is usable.
	BaseNow float64
	// Pegged: most of the last five samples were saturated, so the wave's demand now is
	// unknown beyond being at least its cores.
	Pegged bool
	// PooledCollinear: the prices are, or lean on, the fleet's pooled prices, and these
	// were fitted where rows and bytes move together across the fleet (the same bytes
	// per row everywhere): the pool priced their combined work and split it between
	// rows and bytes by their spreads (fitCentred), a split the data cannot check. At
	// the fleet's bytes per row the cost is the fitted one whatever the split.
	PooledCollinear bool
	// PooledReadCollinear: the prices are, or lean on, the fleet's pooled prices, and
	// across the fleet the binlog its waves read moved only with what they published
	// (every instance publishing what it reads): the pool could not tell reading from
	// publishing, and priced reading within the rows and bytes (Read is 0). An instance
	// that publishes a small part of what it reads is then priced by what it publishes.
	PooledReadCollinear bool
	// PooledFromFits: the prices are, or lean on, the fleet's pooled prices, and these
	// are the median of the waves' own fits, as the pooled fit found no cost of work.
	PooledFromFits bool
	// Unpriced says why, when Source is SourceNone (one of the Unpriced constants).
	Unpriced string
	// PooledWhy says why, when Source is SourcePooled: no samples of the wave's own, too
	// few of them, work that has not varied, or an own fit that weighs less than the pool.
	PooledWhy string
	// Thin: pooled for want of samples of the wave's own (none, or fewer than a fit
	// needs).
	Thin bool
}

// Cost is what rows/s and bytes/s published and binlog bytes/s read cost at these
// prices, in cores.
func (p Prices) Cost(rows, bytes, read float64) float64 {
	return p.Row*rows + p.Byte*bytes + p.Read*read
}

// vector is the prices of work in the fit's order.
func (p Prices) vector() [dims]float64 { return [dims]float64{p.Row, p.Byte, p.Read} }

// costOf is what sample s's work costs at these prices.
func (p Prices) costOf(s sample) float64 { return costAt(p.vector(), s) }

// Options configure a Model.
type Options struct {
	// Window is how far back the samples reach (6 h when zero): the current hour and
	// its history, long enough to see the load move through the day.
	Window time.Duration
	// MinSamples is how many samples a wave needs before its own prices are fitted (30
	// when zero: five minutes at 10 s).
	MinSamples int
	// MaxSamples bounds each wave's samples (4096 when zero), the oldest dropped first.
	MaxSamples int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Model holds the samples of every wave and fits their prices on demand, caching each
// fit until the wave's samples change. It is safe for concurrent use.
type Model struct {
	o Options

	mu     sync.Mutex
	nodes  map[string]*node
	pooled struct {
		at     time.Time // when fitted; zero: never
		prices [dims]float64
		// base is the median wave's idle base at the pooled prices' speed
		// (baseAtSpeed): the idle process a scaled price adds.
		base float64
		ok   bool
		// collinear: fitted in the one direction the data has (fitCentred); why: what
		// failed when not ok (an Unpriced constant).
		collinear bool
		why       string
		// readCollinear: the binlog read moved only with the work published across the
		// pool, and reading was priced within it (fitCentred).
		readCollinear bool
		// fromFits: the joint fit found no cost, and the prices are the median of the
		// waves' own fits (ownFitsMedianLocked).
		fromFits bool
		// err is the share by which the pool at a wave's speed misses the cost of its
		// work (poolErrLocked), as of the last pooling.
		err float64
	}
	// replay gathers the points of one batch while a store scan is replayed.
	replay map[string]*pendingSample
}

type node struct {
	samples  []timedSample // oldest first
	cores    float64       // cpu.cores, last reported; 0 when never
	coresAt  time.Time     // when cores last changed to another value; zero: never
	fitted   Prices
	fittedAt time.Time // zero: never, or to be refitted at the next ask
	fittedN  int       // len(samples) at the fit
	dirty    bool      // samples came since the fit
	// gap is how far the wave's own fit, at its last refit, put the cost of its mean
	// work from the pool's at its speed (a share of the latter), and gapErr that fit's
	// WorkErr (0: no own fit to compare): what poolErrLocked learns the pool's miss from.
	gap, gapErr float64
	// own is the wave's own fit's prices of work at its last refit when it found a cost
	// (a price above 0; else zero): what the pool falls back on where its joint fit
	// finds none (ownFitsMedianLocked).
	own [dims]float64
}

type timedSample struct {
	ts time.Time
	sample
	// hostPegged says the host's CPU (cpu.util) stood at saturatedAt of its cores or
	// more while the wave's process used a busy program's part of them (throttledAt):
	// the scheduler gave it less than it asked, so its reading is a floor of what its
	// work asks, though far under the host's cores.
	hostPegged bool
}

// pendingSample gathers the points of one batch into a sample.
type pendingSample struct {
	ts                               time.Time
	cpu, cores, hostUtil             float64
	hasCPU, hasCores, hasHostUtil    bool
	rows, bytes, read                float64 // the instances' sums
	sawRows, sawBytes, sawRead       bool    // whether any instance reported them
	rowsTotal, bytesTotal, readTotal float64 // the unlabelled totals
}

// New returns an empty model.
func New(o Options) *Model {
	if o.Window <= 0 {
		o.Window = 6 * time.Hour
	}
	if o.MinSamples <= 0 {
		o.MinSamples = 30
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Model{o: o, nodes: map[string]*node{}, replay: map[string]*pendingSample{}}
}

// Window is how far back the samples reach.
func (m *Model) Window() time.Duration { return m.o.Window }

// Observe takes one decoded, valid batch. Only a batch with the wave process's CPU
// (wave.cpu_cores) is a sample; cpu.cores is the node's capacity whatever else it sends.
func (m *Model) Observe(b metric.Batch) {
	var ps pendingSample
	for i := range b.Points {
		ps.take(&b.Points[i])
	}
	ts := b.TS
	if ts.IsZero() {
		ts = m.o.Now()
	}
	ps.ts = ts
	m.mu.Lock()
	m.addLocked(b.Node, &ps)
	m.mu.Unlock()
}

// take adds one point of a batch to the sample it belongs to. A wave reports its work
// per instance (labelled) and summed (unlabelled): the instances' sum is taken when
// there is one, the unlabelled total otherwise.
func (ps *pendingSample) take(p *metric.Point) {
	inst := p.Labels["instance"] != ""
	v := p.Value
	if !(v >= 0) || math.IsInf(v, 1) {
		v = 0 // a broken agent's NaN or negative rate counts as nothing, not as poison
	}
	switch {
	case p.Name == metric.WaveCPUCores && len(p.Labels) == 0:
		ps.cpu, ps.hasCPU = v, true
	case p.Name == metric.CPUCores && len(p.Labels) == 0:
		ps.cores, ps.hasCores = v, true
	case p.Name == metric.CPUUtil && len(p.Labels) == 0:
		ps.hostUtil, ps.hasHostUtil = v, true
	case p.Name == metric.WaveTPS && inst:
		ps.rows += v
		ps.sawRows = true
	case p.Name == metric.WaveBytesPerS && inst:
		ps.bytes += v
		ps.sawBytes = true
	case p.Name == metric.WaveBinlogBytesPerS && inst:
		ps.read += v
		ps.sawRead = true
	case p.Name == metric.WaveTPS && len(p.Labels) == 0:
		ps.rowsTotal = v
	case p.Name == metric.WaveBytesPerS && len(p.Labels) == 0:
		ps.bytesTotal = v
	case p.Name == metric.WaveBinlogBytesPerS && len(p.Labels) == 0:
		ps.readTotal = v
	}
}

func (m *Model) addLocked(id string, ps *pendingSample) {
	n := m.nodes[id]
	if ps.hasCores && ps.cores > 0 {
		if n == nil {
			n = &node{}
			m.nodes[id] = n
		}
		if n.cores > 0 && n.cores != ps.cores {
			n.coresAt = ps.ts
		}
		n.cores = ps.cores
	}
	if !ps.hasCPU {
		return
	}
	if n == nil {
		n = &node{}
		m.nodes[id] = n
	}
	s := sample{rows: ps.rows, bytes: ps.bytes, read: ps.read, cpu: ps.cpu}
	if !ps.sawRows {
		s.rows = ps.rowsTotal
	}
	if !ps.sawBytes {
		s.bytes = ps.bytesTotal
	}
	if !ps.sawRead {
		s.read = ps.readTotal
	}
	ts := timedSample{ts: ps.ts, sample: s,
		hostPegged: ps.hasHostUtil && ps.hostUtil >= 100*saturatedAt && ps.hasCores && s.cpu >= throttledAt*ps.cores}
	if k := len(n.samples); k > 0 && !ps.ts.After(n.samples[k-1].ts) {
		// A redelivered or late batch: insert in order, once per time.
		i := sort.Search(k, func(i int) bool { return !n.samples[i].ts.Before(ps.ts) })
		if i < k && n.samples[i].ts.Equal(ps.ts) {
			return
		}
		n.samples = append(n.samples, timedSample{})
		copy(n.samples[i+1:], n.samples[i:])
		n.samples[i] = ts
	} else {
		n.samples = append(n.samples, ts)
	}
	m.trimLocked(n)
	n.dirty = true
}

// trimLocked drops the samples older than the window (before the clock, or before the
// newest sample when a replay runs ahead of it) and beyond MaxSamples.
func (m *Model) trimLocked(n *node) {
	end := m.o.Now()
	if k := len(n.samples); k > 0 && n.samples[k-1].ts.After(end) {
		end = n.samples[k-1].ts
	}
	cut := end.Add(-m.o.Window)
	drop := 0
	for drop < len(n.samples) && n.samples[drop].ts.Before(cut) {
		drop++
	}
	drop = max(drop, len(n.samples)-m.o.MaxSamples)
	if drop > 0 {
		n.samples = append(n.samples[:0], n.samples[drop:]...)
	}
}

// Replay takes stored points in non-decreasing time order (a store scan, chunk by
// chunk): the points of one node and time make one sample, as their batch did. Call
// EndReplay after the last chunk.
func (m *Model) Replay(points []store.Point) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range points {
		p := &points[i]
		ps := m.replay[p.Node]
		if ps != nil && !ps.ts.Equal(p.TS) {
			m.addLocked(p.Node, ps)
			ps = nil
		}
		if ps == nil {
			ps = &pendingSample{ts: p.TS}
			m.replay[p.Node] = ps
		}
		ps.take(&metric.Point{Name: p.Name, Labels: p.Labels, Value: p.Value})
	}
}

// EndReplay adds the samples a replay still gathers.
func (m *Model) EndReplay() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, ps := range m.replay {
		m.addLocked(id, ps)
	}
	m.replay = map[string]*pendingSample{}
}

// Cores is the node's capacity: its host's cores as its agent last reported them.
func (m *Model) Cores(id string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nodes[id]
	if n == nil || n.cores <= 0 {
		return 0, false
	}
	return n.cores, true
}

// CoresChanged is when the node's cpu.cores last changed to another value (a host
// resized); zero when it never did.
func (m *Model) CoresChanged(id string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.nodes[id]; n != nil {
		return n.coresAt
	}
	return time.Time{}
}

// Prices returns the node's prices, fitted anew when its samples or the fleet's changed.
func (m *Model) Prices(id string) Prices {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pricesLocked(id)
}

// Pooled returns the fleet's pooled prices of work (Base and the fields describing a
// wave's fit unset), and whether any wave had samples to pool.
func (m *Model) Pooled() (Prices, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pooledLocked()
	return Prices{Row: p[0], Byte: p[1], Read: p[2]}, ok
}

// priorStrength is the pull of the pooled prices on a wave's own fit (see fit).
const priorStrength = 0.01

// Refit periods: a fit over hours of samples barely moves with one more, so a wave is
// refitted at most once a minute and the fleet's pooled prices every five, which keeps
// a plan for a thousand waves from refitting a thousand times per request.
const (
	refitEvery  = time.Minute
	repoolEvery = 5 * time.Minute
	// poolSamples bounds what each wave gives the pooled fit (evenly spaced).
	poolSamples = 1024
)

func (m *Model) pricesLocked(id string) Prices {
	n := m.nodes[id]
	prior, pooledOK := m.pooledLocked()
	if n == nil || len(n.samples) == 0 {
		if !pooledOK {
			return Prices{Source: SourceNone, Unpriced: m.pooled.why}
		}
		return Prices{Row: prior[0], Byte: prior[1], Read: prior[2], Source: SourcePooled, PooledCollinear: m.pooled.collinear,
			PooledReadCollinear: m.pooled.readCollinear, PooledFromFits: m.pooled.fromFits, PooledWhy: "no wave.cpu_cores samples of its own: the fleet's pooled prices, its speed unknown", Thin: true}
	}
	now := m.o.Now()
	// Refitted once a minute, or sooner when its samples have doubled since: a fit
	// made from a wave's first few samples (a fast catch-up, a start) was served for a
	// minute while 150 more came, and the fleet was planned in rows/s meanwhile "for
	// want of samples" (an outside trial).
	if !n.fittedAt.IsZero() && (!n.dirty || now.Sub(n.fittedAt) < refitEvery && len(n.samples) < 2*n.fittedN) {
		return n.fitted
	}
	m.trimLocked(n)
	ss, saturated := n.plain(nil)
	p := m.priceOf(n, ss, prior, pooledOK)
	if saturated > 0 && len(ss) > 0 && p.Source != SourceNone {
		// The readings left are biased low near the cap: of the samples whose work
		// brought the wave close to its cores, only those whose noise fell low stayed
		// under saturatedAt, and a fit to them prices the work too cheap and the base
		// too dear (a 4-core wave of the fleet simulator pegged in half its samples
		// came out at 0.8 of its row price and 2.3 times its base). So the samples are
		// chosen again by what these prices predict, which does not depend on the
		// noise, and priced again.
		if ss2, sat2 := n.plain(&p); sat2 > saturated && len(ss2) > 0 {
			ss, saturated = ss2, sat2
			p = m.priceOf(n, ss, prior, pooledOK)
		}
	}
	p.Samples, p.Saturated = len(ss), saturated
	p.BaseNow, p.Pegged = n.baseNow(p)
	if p.Source == SourceNone {
		p.Unpriced = m.pooled.why
	}
	n.fitted, n.fittedAt, n.fittedN, n.dirty = p, now, len(n.samples), false
	return p
}

// priceOf prices n's work from its samples ss (those that did not saturate), the
// fleet's pooled prices prior standing in where they cannot.
func (m *Model) priceOf(n *node, ss []sample, prior [dims]float64, pooledOK bool) Prices {
	var p Prices
	n.gap, n.gapErr = 0, 0 // until an own fit sets them
	switch {
	case len(ss) == 0:
		// Every sample saturated: the work costs at least the cores, at the fleet's
		// prices scaled up to that where they come short, with no base of its own to
		// tell (the floor: its true speed shows only once it is relieved).
		p = Prices{Source: SourceNone, Base: n.cores}
		if pooledOK {
			p = m.scaledLocked(prior, math.Max(1, saturatedAt*n.cores/(costAt(prior, means(n.samples))+m.pooled.base)))
		}
	case len(ss) >= m.o.MinSamples && varies(ss):
		p = m.ownFit(n, ss, prior, pooledOK)
	default:
		// Too few samples, or work that never changed, to fit three prices: one is
		// fitted instead, the wave's speed relative to the fleet, the factor on the
		// fleet's prices and base that meets the wave's mean CPU. A host twice as slow
		// as the fleet's median is priced twice as dear from its first samples on,
		// rather than at the fleet's prices with the difference called its idle base
		// (which moving instances off it never lowers). Samples whose CPU is mostly
		// the base say little of the work's speed: the pegged readings' floor holds
		// it up then.
		p = Prices{Base: meanSample(ss).cpu, Source: SourceNone}
		if pooledOK {
			speed := m.speedLocked(prior, ss)
			if !m.workLedLocked(prior, ss) {
				speed = max(speed, m.peggedFloorLocked(n, prior))
			}
			p = m.scaledLocked(prior, speed)
			p.CostErr = m.pooled.err
			p.PooledWhy = fmt.Sprintf("%d of the %d samples a fit of its own needs: the fleet's prices at the wave's speed", len(ss), m.o.MinSamples)
			p.Thin = len(ss) < m.o.MinSamples
			if !p.Thin {
				p.PooledWhy = "its work has not varied enough to fit prices of its own: the fleet's prices at the wave's speed"
			}
		}
		p.R2, p.RMSE = explained(ss, fitResult{price: p.vector(), base: p.Base})
	}
	return p
}

// ownFit is the wave's own fit, blended with the fleet's prices at the wave's speed by
// how well each is known: the own fit's weight is 1/WorkErr², the pool's 1/err² for err
// the pool's learned miss (poolErrLocked), so that a fit whose work barely moved leans
// on the pool and one whose work moved on its own, as far as the fleet's waves truly
// differ, with no jump between the two as samples come. Source says which weighs more.
// It keeps the gap between the two on n for the next pooling.
func (m *Model) ownFit(n *node, ss []sample, prior [dims]float64, pooledOK bool) Prices {
	f := fit(ss, prior, priorStrength)
	n.own = [dims]float64{}
	if slices.Max(f.price[:]) > 0 {
		for a := range dims {
			n.own[a] = max(f.price[a], 0)
		}
	}
	p := Prices{Row: f.price[0], Byte: f.price[1], Read: f.price[2], Base: f.base, Source: SourceFitted, R2: f.r2, RMSE: f.rmse, WorkErr: f.workErr}
	if !pooledOK {
		return p
	}
	mean := meanSample(ss)
	sp := m.scaledLocked(prior, m.speedLocked(prior, ss))
	if pw := sp.costOf(mean); pw > 0 && f.workErr < math.Inf(1) {
		n.gap, n.gapErr = costAt(f.price, mean)/pw-1, f.workErr
	}
	// The two precisions: the own fit's is 0 when its error is infinite (its work costs
	// nothing at its prices), infinite when its samples fit exactly.
	wo, wp := 1/(f.workErr*f.workErr), 1/(m.pooled.err*m.pooled.err)
	a := 1.0 // the own fit's share
	if !math.IsInf(wo, 1) {
		a = wo / (wo + wp)
	}
	p.Row, p.Byte, p.Read = a*f.price[0]+(1-a)*sp.Row, a*f.price[1]+(1-a)*sp.Byte, a*f.price[2]+(1-a)*sp.Read
	p.Base = a*f.base + (1-a)*sp.Base
	p.CostErr = 1 / math.Sqrt(wo+wp)
	p.PooledCollinear = a < 1 && m.pooled.collinear
	p.PooledReadCollinear = a < 1 && m.pooled.readCollinear
	p.PooledFromFits = a < 1 && m.pooled.fromFits
	if a < 0.5 {
		p.Source = SourcePooled
		p.PooledWhy = fmt.Sprintf("its own fit (work_err %.2g) weighs less than the fleet's prices at the wave's speed", f.workErr)
		if math.IsInf(f.workErr, 1) { // work_err -1 in the API: say what it means there
			p.PooledWhy = "its own fit cannot say what its work costs (work_err -1: the work costs nothing at its prices, " +
				"or its samples are collinear): the fleet's prices at the wave's speed stand in"
		}
	}
	return p
}

// Bounds of the pool's learned miss (poolErrLocked), and what it is taken to be before
// any wave has a fit of its own to learn it from.
const (
	minPoolErr     = 0.01
	maxPoolErr     = 0.5
	defaultPoolErr = 0.05
)

// poolErrLocked is how far the pool's prices at a wave's speed are taken to miss the
// cost of its work, learned from the waves' own fits as a random-effects meta-analysis
// does (DerSimonian and Laird's moments): each own fit's gap from the pool g_i, of
// standard error e_i, scatters by e_i² + τ² about 0 when the waves' true prices scatter
// by τ² about the pool's, so with w_i = 1/e_i², E[Σ w_i g_i²] = k + τ² Σ w_i and
// τ² = (Σ w_i g_i² − k) / Σ w_i. On a fleet of alike hosts τ is about 0 and every wave
// leans on the pool, whatever moves do to its own fit's error (on the simulator's
// homogeneous fleet a fixed miss of 3 % let the waves shift between the pool and their
// own fits as moves varied their work, and plans went on after the target); where hosts
// differ in what a byte costs them, the waves whose work moved are priced on their own.
func (m *Model) poolErrLocked() float64 {
	var q, sw float64
	k := 0
	for _, id := range slices.Sorted(maps.Keys(m.nodes)) { // sums in one order: see poolInputLocked
		n := m.nodes[id]
		if n.gapErr <= 0 {
			continue
		}
		w := 1 / (n.gapErr * n.gapErr)
		q, sw = q+w*n.gap*n.gap, sw+w
		k++
	}
	if k < minPoolFits {
		return defaultPoolErr
	}
	tau2 := (q - float64(k)) / sw
	return min(max(math.Sqrt(max(0, tau2)), minPoolErr), maxPoolErr)
}

// minPoolFits is how many waves' own fits poolErrLocked needs to tell the pool's miss.
const minPoolFits = 5

// Bounds of a pooled wave's speed factor: a few samples of a host do not make it more
// than four times as fast or as slow as the fleet's median.
const (
	minSpeed = 0.25
	maxSpeed = 4
)

// speedWorkShare is the least share of a sample's predicted CPU its work must be for the
// sample to tell the wave's speed.
const speedWorkShare = 0.25

// speedLocked is the factor on the fleet's prices and base that meets the CPU of the
// samples ss: the median of each sample's CPU over what those predict (1 when nothing
// tells). A median, not the mean CPU over the mean prediction: a GC storm or a
// snapshot in a few of a thin wave's samples (three times the CPU in one of twenty)
// would make its host look a tenth slower than it is, and every instance on it dearer.
// Only samples whose work is a fair share of the prediction (speedWorkShare) tell: an
// idle wave's CPU is its process's base, which says little of what a row costs there
// (an outside trial: a new, empty wave priced 35 % under its true row price, by its
// idle CPU against the busy waves' fitted base, and the plans overfilled it); a wave
// with none is priced at the fleet's prices (BaseNow still measures its base).
func (m *Model) speedLocked(prior [dims]float64, ss []sample) float64 {
	ratios := make([]float64, 0, len(ss))
	for _, s := range ss {
		work := costAt(prior, s)
		if d := work + m.pooled.base; d > 0 && s.cpu > 0 && work >= speedWorkShare*d {
			ratios = append(ratios, s.cpu/d)
		}
	}
	if len(ratios) == 0 {
		return 1
	}
	return median(ratios)
}

// peggedFloorLocked is the least speed n's latest saturated readings allow, 0 with
// none: each is a floor of what its work cost (the process used what it could get), so
// the speed is at least its CPU over its work and base at the fleet's prices; the median
// of the last recentMin of them, those nearest the wave's load now (a wave relieved step
// by step was pegged less deeply each time). A wave relieved from a pegged start is
// priced from its first few samples until it has a fit of its own, and when their work
// is light beside its base they tell nothing of its speed, which then fell back to the
// fleet's: on the fleet simulator's seed 26 a 2-core wave nearly emptied by the plans was
// priced at half its prices, and the next plan moved two instances onto it, 1.6 times
// over the target, where its last pegged readings put it at 0.93 of its speed. Where
// the wave's work leads its samples' CPU, those measure its speed better than a floor
// read on other work (workLedLocked), and the floor is not asked.
func (m *Model) peggedFloorLocked(n *node, prior [dims]float64) float64 {
	var floors []float64
	for i := len(n.samples) - 1; i >= 0 && len(floors) < recentMin; i-- {
		s := n.samples[i]
		if !n.pegged(s) {
			continue
		}
		if d := costAt(prior, s.sample) + m.pooled.base; d > 0 {
			floors = append(floors, s.cpu/d)
		}
	}
	if len(floors) == 0 {
		return 0
	}
	return median(floors)
}

// workLedLocked reports whether the work leads ss's CPU (its cost at the fleet's prices
// at least half of it with the fleet's base, in the median sample): their speed is then
// measured on the work as it is now, and stands over a pegged floor measured on the
// work as it was. Each pegged reading is a floor of what its own work cost at the
// wave's true prices, not at the fleet's times a speed: on the fleet simulator, whose
// hosts differ in what a byte costs them beside their speeds, a 2-core wave relieved of
// its bytes-heavy instances was priced 9 % over its true row price by its floor (seed
// 8), where its five samples since, its work 95 % of their CPU, read 5 %.
func (m *Model) workLedLocked(prior [dims]float64, ss []sample) bool {
	shares := make([]float64, 0, len(ss))
	for _, s := range ss {
		if work := costAt(prior, s); work+m.pooled.base > 0 {
			shares = append(shares, work/(work+m.pooled.base))
		}
	}
	return len(shares) > 0 && median(shares) >= 0.5
}

// scaledLocked is the pooled prices and base times the speed factor f (bounded).
func (m *Model) scaledLocked(prior [dims]float64, f float64) Prices {
	f = min(max(f, minSpeed), maxSpeed)
	return Prices{Row: f * prior[0], Byte: f * prior[1], Read: f * prior[2], Base: f * m.pooled.base, Source: SourcePooled,
		PooledCollinear: m.pooled.collinear, PooledReadCollinear: m.pooled.readCollinear, PooledFromFits: m.pooled.fromFits}
}

// meanSample is the mean work and CPU of ss.
func meanSample(ss []sample) sample {
	var m sample
	for _, s := range ss {
		m.rows, m.bytes, m.read, m.cpu = m.rows+s.rows, m.bytes+s.bytes, m.read+s.read, m.cpu+s.cpu
	}
	k := float64(len(ss))
	return sample{rows: m.rows / k, bytes: m.bytes / k, read: m.read / k, cpu: m.cpu / k}
}

// means is meanSample of timed samples.
func means(ts []timedSample) sample {
	ss := make([]sample, len(ts))
	for i, s := range ts {
		ss[i] = s.sample
	}
	return meanSample(ss)
}

// WarmEvery is how often a caller that keeps the fits warm (Warm) calls it. Warm refits
// a wave once its fit is warmAge old, so that an ask never finds one past the refit
// period: at a few seconds each wave is still refitted about once a refit period, as the
// asks would, not twice.
const WarmEvery = 5 * time.Second

// warmAge is the age at which Warm refits a wave's fit (or the pool, at its own period
// less WarmEvery): the refit period less one WarmEvery.
const warmAge = refitEvery - WarmEvery

// Warm refits every wave that has samples since its fit and whose fit is warmAge old,
// and the pool when it is due within WarmEvery, so that asking for prices finds them
// fitted. Refitting a thousand waves of six hours of 10 s samples takes seconds (the
// robust fit reweights each wave's samples up to 50 times; BENCHMARKS.md), which a
// plan's request should not wait for. The lock is taken for one wave's fit at a time,
// so that the agents' batches and the asks go on between them. It returns how many
// waves it refitted.
func (m *Model) Warm() int {
	m.mu.Lock()
	ids := make([]string, 0, len(m.nodes))
	for id := range m.nodes {
		ids = append(ids, id)
	}
	// A pool never fitted (a judge just started, its samples restored) is fitted here
	// too: the first wave's refit below would fit it under the lock.
	cold := m.pooled.at.IsZero()
	repool := cold || m.o.Now().Sub(m.pooled.at) >= repoolEvery-WarmEvery
	var in poolInput
	if repool {
		in = m.poolInputLocked()
		if !cold {
			// The pool in hand serves the asks until the new one is in, rather than an
			// ask fitting it again under the lock meanwhile. A cold one has no pool in
			// hand: an ask meanwhile fits it as before.
			m.pooled.at = m.o.Now()
		}
	}
	m.mu.Unlock()
	if repool {
		m.repool(in)
	}
	n := 0
	for _, id := range ids {
		m.mu.Lock()
		if nd := m.nodes[id]; nd != nil && len(nd.samples) > 0 &&
			(nd.fittedAt.IsZero() || nd.dirty && m.o.Now().Sub(nd.fittedAt) >= warmAge) {
			nd.fittedAt = time.Time{}
			m.pricesLocked(id)
			n++
		}
		m.mu.Unlock()
	}
	return n
}

// repool fits the pool to in without the lock, which a fit of a thousand waves would
// hold for seconds (each robust fit reweights every sample dozens of times: 5.8 s on
// BenchmarkRefitFleet's thousand waves), keeping the agents' batches and the asks
// waiting; then installs it under the lock.
func (m *Model) repool(in poolInput) {
	var f fitResult
	if len(in.all) > 0 {
		f = fitAtSpeeds(in.all, in.spans)
		if poolFitted != nil {
			poolFitted(m)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(in.all) == 0 {
		m.pooled.at = time.Time{}
		m.noPoolLocked()
		return
	}
	m.setPoolLocked(in, f, m.o.Now())
}

// poolFitted, when set (tests), is called when repool has fitted the pool, before it
// takes the lock to install it.
var poolFitted func(*Model)

// Refit forgets every cached fit, so that the next ask fits anew (tests, and a caller
// that just replayed history).
func (m *Model) Refit() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pooled.at = time.Time{}
	for _, n := range m.nodes {
		n.fittedAt = time.Time{}
	}
}

// saturatedAt is the share of its cores at which a wave's CPU reading no longer says
// what its work costs: a process pegged at its cores uses all it can get, whatever its
// work would take, so the reading is a floor of the cost, not the cost.
const saturatedAt = 0.95

// plain is the samples the prices are fitted to, and how many were left out as
// saturated: those whose CPU reading saturated and, with prices p, those p predicts
// within nearCap of its RMSE of saturating (at a saturated wave, what its readings
// say is biased by which of them saturated; what the prices predict is not).
func (n *node) plain(p *Prices) (out []sample, saturated int) {
	out = make([]sample, 0, len(n.samples))
	risk := math.Inf(1)
	if p != nil && n.cores > 0 {
		risk = saturatedAt*n.cores - nearCap*p.RMSE
	}
	for _, s := range n.samples {
		if n.pegged(s) || p != nil && p.Base+p.costOf(s.sample) >= risk {
			saturated++
			continue
		}
		out = append(out, s.sample)
	}
	return out, saturated
}

// throttledAt is the share of its host's cores from which a wave's process on a pegged
// host is taken to have been slowed by it. A scheduler gives a program that asks less
// than an equal part of the cores all it asks, so a light wave beside busy programs reads
// its work's true cost (its samples count); one that uses a large part of them reads
// what it got. A quarter: on the fleet simulator's hosts of two waves and other work,
// whose busy wave read what a max-min fair scheduler gave it, the judge priced those
// waves low from it and its plans chased them (seed 8: 120 moves, never within 1.10× of
// greedy), where waves of a few percent of their host (a real wave's test on a loaded
// 2-core machine: 0.02–0.12 cores) keep every sample.
const throttledAt = 0.25

// pegged reports whether sample s saturated: the wave's own reading at saturatedAt of
// its host's cores, or its host's CPU there while the wave used a busy program's part
// of it (timedSample.hostPegged).
func (n *node) pegged(s timedSample) bool {
	return n.cores > 0 && s.cpu >= saturatedAt*n.cores || s.hostPegged
}

// nearCap is how many of its RMSEs under saturatedAt a sample's predicted CPU must
// stand for its reading to count (plain): at two, a reading saturates by noise about
// once in forty.
const nearCap = 2

// The latest samples BaseNow is taken from: those of the last recentSpan, at least
// recentMin of them.
const (
	recentSpan = 30 * time.Minute
	recentMin  = 5
)

// baseNow is the median residual of the latest samples at prices p (see
// Prices.BaseNow), never below 0, and whether most of the last recentMin were saturated
// (then the base is p's: a pegged reading's residual says nothing).
func (n *node) baseNow(p Prices) (float64, bool) {
	k := len(n.samples)
	if k == 0 {
		return p.Base, false
	}
	from := k - 1
	for from > 0 && (k-from < recentMin || !n.samples[from-1].ts.Before(n.samples[k-1].ts.Add(-recentSpan))) {
		from--
	}
	var res []float64
	pegged := 0 // of the last recentMin samples
	for i, s := range n.samples[from:] {
		if n.pegged(s) {
			if from+i >= k-recentMin {
				pegged++
			}
			continue
		}
		res = append(res, s.cpu-p.costOf(s.sample))
	}
	if len(res) == 0 || 2*pegged > min(k, recentMin) {
		return p.Base, true
	}
	return math.Max(0, median(res)), false
}

// varies reports whether the work changed enough across the samples to price it: a
// coefficient of variation of at least 2 % in rows, bytes or binlog read.
func varies(ss []sample) bool {
	for a := range dims {
		mean, sd := meanSD(ss, func(s sample) float64 { return s.work()[a] })
		if mean > 0 && sd/mean >= 0.02 {
			return true
		}
	}
	return false
}

// pooledLocked fits the fleet's prices of work (poolInputLocked, fitAtSpeeds,
// setPoolLocked) when the last fit is repoolEvery old, and returns them.
func (m *Model) pooledLocked() ([dims]float64, bool) {
	now := m.o.Now()
	if !m.pooled.at.IsZero() && now.Sub(m.pooled.at) < repoolEvery {
		return m.pooled.prices, m.pooled.ok
	}
	in := m.poolInputLocked()
	if len(in.all) == 0 {
		return m.noPoolLocked()
	}
	return m.setPoolLocked(in, fitAtSpeeds(in.all, in.spans), now)
}

// poolInput is what the pooled fit is made from: every wave with enough samples, each
// centred on its own means, in one list (each wave's in all[spans[i]], at most
// poolSamples of it), and each one's samples whole (pool: its base at the prices).
// Its slices are the model's own copies, so that the fit can run without the lock.
type poolInput struct {
	all   []sample
	spans [][2]int
	pool  [][]sample
}

// poolInputLocked gathers the pooled fit's input, wave by wave in the order of their ids:
// the fit's sums in the map's order differed in their last bits from one run to the
// next, and near-ties between destinations went either way (the simulator's 200-wave
// fleet moved two instances to each other's wave in one run of two).
func (m *Model) poolInputLocked() poolInput {
	var in poolInput
	for _, id := range slices.Sorted(maps.Keys(m.nodes)) {
		n := m.nodes[id]
		var p *Prices
		if !n.fittedAt.IsZero() && n.fitted.Saturated > 0 && n.fitted.Source != SourceNone {
			p = &n.fitted // the samples its own pricing chose (pricesLocked)
		}
		ss, _ := n.plain(p) // a copy
		k := len(ss)
		if k < m.o.MinSamples {
			continue
		}
		mean := meanSample(ss)
		in.pool = append(in.pool, ss)
		from := len(in.all)
		step := max(1, k/poolSamples)
		for i := 0; i < k; i += step {
			s := ss[i]
			in.all = append(in.all, sample{rows: s.rows - mean.rows, bytes: s.bytes - mean.bytes, read: s.read - mean.read, cpu: s.cpu - mean.cpu})
		}
		in.spans = append(in.spans, [2]int{from, len(in.all)})
	}
	return in
}

// noPoolLocked is pooledLocked with nothing to pool yet: it says why, and leaves the
// pool to be fitted at the next ask rather than caching the absence.
func (m *Model) noPoolLocked() ([dims]float64, bool) {
	m.pooled.why = UnpricedNoCPU
	for _, n := range m.nodes {
		if len(n.samples) > 0 {
			m.pooled.why = UnpricedFewSamples
			break
		}
	}
	return [dims]float64{}, false
}

// setPoolLocked makes f, fitted to in at now, the fleet's pooled prices.
func (m *Model) setPoolLocked(in poolInput, f fitResult, now time.Time) ([dims]float64, bool) {
	prices, ok, collinear, fromFits := f.price, slices.Max(f.price[:]) > 0, f.collinear, false
	if !ok {
		// The joint fit found no cost of work (lightly loaded waves, whose CPU barely
		// moves with their rows), where some waves' own fits found one: the median of
		// those stands in, so that a wave with no work of its own to price (a new one,
		// or one emptied) is priced, planned and failed over to. It was left out of
		// every plan, and a new wave took no share, nor any failover (an outside trial).
		if own, n := m.ownFitsMedianLocked(); n > 0 {
			prices, ok, collinear, fromFits = own, true, false, true
		}
	}
	bases := make([]float64, len(in.pool))
	for i, ss := range in.pool {
		bases[i] = baseAtSpeed(ss, prices)
	}
	m.pooled.at = now
	m.pooled.prices, m.pooled.ok, m.pooled.fromFits = prices, ok, fromFits
	m.pooled.collinear, m.pooled.why = collinear && ok, ""
	m.pooled.readCollinear = f.readCollinear && ok && !fromFits
	if !m.pooled.ok {
		m.pooled.why = UnpricedNoPool
	}
	m.pooled.base = median(bases)
	m.pooled.err = m.poolErrLocked()
	return m.pooled.prices, m.pooled.ok
}

// ownFitsMedianLocked is the median price of each kind of work over the waves whose own
// fit found a cost of work, and how many they are.
func (m *Model) ownFitsMedianLocked() ([dims]float64, int) {
	var each [dims][]float64
	for _, n := range m.nodes {
		if n.own != [dims]float64{} {
			for a := range dims {
				each[a] = append(each[a], n.own[a])
			}
		}
	}
	var out [dims]float64
	if len(each[0]) == 0 {
		return out, 0
	}
	for a := range dims {
		out[a] = median(each[a])
	}
	return out, len(each[0])
}

// baseAtSpeed is a wave's idle base at the pooled prices' speed: the intercept of its
// CPU over its work at the pooled prices, divided by the slope, the wave's
// speed against the pool (bounded as a pooled wave's is), so that scaledLocked's factor
// gives each wave its own again; never below 0. What its mean CPU leaves of its mean
// work at the pooled prices alone would call a slow host's extra cost its idle process
// (on the fleet simulator's seed 2 the median wave's base came out six times the idle
// process's), and a wave priced from the pool would carry that as a base which moving its
// instances off never lowers.
func baseAtSpeed(ss []sample, prices [dims]float64) float64 {
	var sw, sc, sww, swc float64
	for _, s := range ss {
		w := costAt(prices, s)
		sw, sc, sww, swc = sw+w, sc+s.cpu, sww+w*w, swc+w*s.cpu
	}
	k := float64(len(ss))
	mw, mc := sw/k, sc/k
	speed := 1.0 // work that never changed: no speed to tell
	if vw := sww/k - mw*mw; vw > 1e-12*mw*mw {
		speed = min(max((swc/k-mw*mc)/vw, minSpeed), maxSpeed)
	}
	return math.Max(0, mc-speed*mw) / speed
}

// collinearTol is how little of the rows' and bytes' variation across the pool may be
// their own (1 − ρ², ρ their correlation) before the pool is taken to move them only
// together (fitCentred): at 10⁻⁴ an unconstrained split of the two prices has a variance
// ten thousand times a separable pool's, a guess the samples' noise decides.
const collinearTol = 1e-4

// fitCentred fits prices without a base to samples centred on their waves' means.
//
// Where rows and bytes move together across the whole pool (every instance publishing
// about the same bytes per row), the samples price only their sum and leave the split
// to their noise: the unconstrained fit is singular, or near it a guess. The pool is then
// fitted in the one direction its data has, the combined work rows/σr + bytes/σb (σ each
// one's spread), and that one price is split evenly between the two in those units: the
// minimum-norm least squares answer, the limit of the per-wave fit's ridge (fit) as its
// pull goes to zero with no prior to pull to. At the fleet's mix it predicts the CPU the
// combined slope does, whatever the split (bytes = k·rows makes row/σr·rows +
// byte/σb·bytes the same sum); an instance of another mix is priced half by how far its
// rows, half by how far its bytes run from the fleet's, rather than by one of the two
// only. collinear is set on the result.
//
// Where the binlog read moves only with the rows and bytes published (every instance
// publishing what it reads, no filter anywhere), the pool cannot tell what reading costs
// from what publishing does: reading is left out (its price 0), and rows and bytes price
// both, which at the fleet's mix is the same cost. readCollinear is set on the result.
func fitCentred(ss []sample) fitResult {
	readWithWork := readCollinear(ss)
	if readWithWork {
		z := make([]sample, len(ss))
		for i, s := range ss {
			z[i] = sample{rows: s.rows, bytes: s.bytes, cpu: s.cpu}
		}
		ss = z
	}
	var f fitResult
	if sr, sb, ok := collinear(ss); ok {
		z := make([]sample, len(ss))
		for i, s := range ss {
			z[i] = sample{rows: s.rows/sr + s.bytes/sb, read: s.read, cpu: s.cpu}
		}
		f = fitWith(z, [dims]float64{}, 0, true)
		f.price = [dims]float64{f.price[0] / sr, f.price[0] / sb, f.price[2]}
		f.collinear = true
	} else {
		// Centred regressors take negative values: scale by the root mean square as fit
		// does, with no prior and no base (the mean of centred data is zero).
		f = fitWith(ss, [dims]float64{}, 0, true)
	}
	f.base, f.readCollinear = 0, readWithWork
	return f
}

// collinear reports whether the samples' rows and bytes both vary and move together
// (correlation ρ > 0 with 1 − ρ² < collinearTol), with their spreads.
func collinear(ss []sample) (sr, sb float64, ok bool) {
	mr, sdr := meanSD(ss, func(s sample) float64 { return s.rows })
	mb, sdb := meanSD(ss, func(s sample) float64 { return s.bytes })
	if sdr == 0 || sdb == 0 {
		return 0, 0, false
	}
	var c float64
	for _, s := range ss {
		c += (s.rows - mr) * (s.bytes - mb)
	}
	rho := c / float64(len(ss)) / (sdr * sdb)
	return sdr, sdb, rho > 0 && 1-rho*rho < collinearTol
}

// readCollinear reports whether the samples' binlog read varies and all but
// collinearTol of its variation is the rows' and bytes' (1 − R² of read over the two,
// by projecting it off their centred directions, Gram–Schmidt).
func readCollinear(ss []sample) bool {
	n := len(ss)
	if n == 0 {
		return false
	}
	mean := meanSample(ss)
	y := make([]float64, n)
	var tot float64
	for i, s := range ss {
		y[i] = s.read - mean.read
		tot += y[i] * y[i]
	}
	if tot == 0 {
		return false
	}
	var basis [][]float64
	for _, get := range []func(sample) float64{func(s sample) float64 { return s.rows }, func(s sample) float64 { return s.bytes }} {
		m := get(mean)
		u := make([]float64, n)
		var norm0 float64
		for i, s := range ss {
			u[i] = get(s) - m
			norm0 += u[i] * u[i]
		}
		for _, b := range basis {
			project(u, b)
		}
		if norm := dot(u, u); norm > 1e-12*norm0 && norm > 0 {
			scale(u, 1/math.Sqrt(norm))
			basis = append(basis, u)
		}
	}
	for _, b := range basis {
		project(y, b)
	}
	return dot(y, y)/tot < collinearTol
}

// dot is the inner product of a and b (of equal length).
func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// project removes from u its part along the unit vector b.
func project(u, b []float64) {
	d := dot(u, b)
	for i := range u {
		u[i] -= d * b[i]
	}
}

// scale multiplies u by f.
func scale(u []float64, f float64) {
	for i := range u {
		u[i] *= f
	}
}

// Nodes lists the nodes the model has samples or a capacity of, sorted.
func (m *Model) Nodes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.nodes))
	for id := range m.nodes {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
