package judge

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/rebalance"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/loadmodel"
)

// The load view: what the judge knows of a wave's load, for plans and placements alike,
// in one unit: CPU cores over the wave host's cores (utilisation). Each load is a vector
// of slots, the load now and then in each UTC hour of the day, so that a plan keeps
// every wave under its cap at its predicted peak hour (the predictive plugin's idea,
// applied to the fleet):
//
//   - a wave's capacity is its host's cores (cpu.cores), shared equally with the live
//     waves on the same host (sharedhost.go);
//   - its prices are what the load model fitted for it (judge/loadmodel): cores per
//     row/s and per byte/s published, per binlog byte/s read, and the base its process
//     costs idle;
//   - an instance's work per slot is its rows/s, bytes/s and binlog bytes/s now (their
//     EWMAs) and, per hour, its hour-of-day profile over the last 7 days (the historical
//     analysis; an hour without data takes the level now), priced at the wave it runs or
//     would run on;
//   - a wave's base is what its host uses now that its instances do not explain (the
//     host's CPU now minus its instances' costs), at least its process's idle base.

// slots is the length of a load vector: now, then the 24 UTC hours of the day.
const slots = 1 + 24

// waveView is one wave node as the load view sees it.
type waveView struct {
	node   string
	cores  float64 // 0: its agent reports none
	prices loadmodel.Prices
	host   []float64 // cores the host uses now ([0]); nil when it reports no cpu.util
	// hostLast is the cores of the host's last cpu.util reading, unsmoothed (0 with host
	// nil): what a pegged wave is judged by (planWave).
	hostLast float64
	costs    nodeCosts
	// bootID is the host's (host.info), and sharesWith the live waves on the same host,
	// whose cores it shares (shareHosts).
	bootID     string
	sharesWith []string
}

// instWork is an instance's work per slot: rows and bytes published, binlog bytes read.
type instWork struct {
	rows, bytes, read []float64
}

// viewOf builds the view of node n from the current hour and the load model.
func (j *Judge) viewOf(n analysis.Node) waveView {
	v := waveView{node: n.Node, prices: j.model.Prices(n.Node), costs: costsOf(n, j.o.Rebalance.InstanceFloor), bootID: bootIDOf(n)}
	v.cores, _ = j.model.Cores(n.Node)
	if v.cores <= 0 {
		return v
	}
	// The host's CPU is its smoothed cpu.util times its cores; for a while after its
	// cores changed (a resized host), its last reading: the smoothed percentage still
	// holds the old size's, and times the new cores it read 0.90 for 20 s where the host
	// stood at 0.47, and the plans moved instances off it.
	resized := j.model.CoresChanged(n.Node)
	interval := cmp.Or(n.Interval, 10*time.Second) // the agents' default when not known
	util, last, ok := -1.0, 0.0, false
	for _, s := range n.Series {
		if s.Name == metric.CPUUtil && len(s.Labels) == 0 && s.HasLevel() && !n.Stopped(s) {
			util, last, ok = s.EWMA, s.Last, true
			if !resized.IsZero() && s.LastTS.Sub(resized) < resizedFor*interval {
				util = s.Last
			}
		}
	}
	if !ok {
		return v
	}
	v.host = []float64{nonNegative(util) / 100 * v.cores}
	v.hostLast = nonNegative(last) / 100 * v.cores
	return v
}

// resizedFor is how many of its node's intervals a host's last cpu.util stands for its
// smoothed one after its cores changed: the smoothing (analysis's EWMA, a weight of 0.2
// for each sample) keeps 1 % of the old size's level after 20.
const resizedFor = 20

// workOf is instance id's work per slot: its rates now from c, and its hour-of-day
// profile (profiles.of).
func workOf(id string, c api.InstanceCost, prof *profiles) instWork {
	w := instWork{rows: make([]float64, slots), bytes: make([]float64, slots)}
	w.rows[0], w.bytes[0] = c.RowsPerS, c.BytesPerS
	p := prof.of(id)
	for hr := range 24 {
		w.rows[1+hr], w.bytes[1+hr] = w.rows[0], w.bytes[0]
		if p != nil && p.Count[hr] > 0 {
			w.rows[1+hr], w.bytes[1+hr] = nonNegative(p.Rows[hr]), nonNegative(p.Bytes[hr])
		}
	}
	// The binlog read by its own profile: the source's binlog need not follow what the
	// instance publishes of it (a filter keeping a quiet table of a busy server).
	hasRead := c.BinlogBytesPerS > 0
	for hr := range 24 {
		hasRead = hasRead || p != nil && p.ReadCount[hr] > 0
	}
	if hasRead {
		w.read = make([]float64, slots)
		w.read[0] = c.BinlogBytesPerS
		for hr := range 24 {
			w.read[1+hr] = w.read[0]
			if p != nil && p.ReadCount[hr] > 0 {
				w.read[1+hr] = nonNegative(p.Read[hr])
			}
		}
	}
	return w
}

// profiles finds instances' hour-of-day profiles in one historical snapshot. An
// instance that moved within the profiles' 7 days has one on each wave that ran it, and
// each holds only some of its days (a wave that no longer runs it reports its rate as 0
// for the rest, or nothing): per hour, the largest of them is the one taken, which is
// the rate of the days it ran there. The nodes with a profile of each instance are
// indexed once per snapshot (profilesOf), so that the placement snapshot, pricing every
// wave's instances at each build, does not search every node for each.
type profiles struct {
	hist  *analysis.Snapshot
	nodes map[string][]string // instance → the nodes with its profile, sorted
}

// profilesOf returns the profiles of hist (nil: none), built on first use per snapshot.
func (j *Judge) profilesOf(hist *analysis.Snapshot) *profiles {
	if hist == nil {
		return nil
	}
	if p := j.profIdx.Load(); p != nil && p.hist == hist {
		return p
	}
	p := &profiles{hist: hist, nodes: map[string][]string{}}
	for n, insts := range hist.Instances {
		for id := range insts {
			p.nodes[id] = append(p.nodes[id], n)
		}
	}
	for _, ns := range p.nodes {
		slices.Sort(ns)
	}
	j.profIdx.Store(p)
	return p
}

// of is instance id's profile: per hour, the one of the nodes that has the most points
// of it that hour at a rate above 0 (the larger rate among equals), else one at 0; nil
// when none has one. Zeros last: the wave an instance left reports it at 0 for a few
// intervals, and the hours since the move are the new wave's. Not the largest rate: a node that claimed the instance for a few seconds (a catch-up burst after a
// move, a stale or broken agent) would set its cost at that hour for the week the
// profile spans (an outside trial: 30 s of 10⁶ rows/s on another node priced a 3,000
// rows/s instance at 29 cores, its wave at 1,510 %).
func (p *profiles) of(id string) *analysis.InstanceProfile {
	if p == nil {
		return nil
	}
	ns := p.nodes[id]
	switch len(ns) {
	case 0:
		return nil
	case 1:
		pr := p.hist.Instances[ns[0]][id]
		return &pr
	}
	var out analysis.InstanceProfile
	for _, n := range ns {
		pr := p.hist.Instances[n][id]
		for hr := range 24 {
			if pr.Count[hr] > 0 && (out.Count[hr] == 0 || hourBefore(&pr, &out, hr)) {
				out.Rows[hr], out.Bytes[hr], out.Count[hr] = pr.Rows[hr], pr.Bytes[hr], pr.Count[hr]
				out.Read[hr], out.ReadCount[hr] = pr.Read[hr], pr.ReadCount[hr]
			}
		}
	}
	return &out
}

// hourBefore reports whether a's hour hr speaks for the instance before b's: a rate
// above 0 first, then more points, then the larger rate.
func hourBefore(a, b *analysis.InstanceProfile, hr int) bool {
	if ap, bp := a.Rows[hr] > 0, b.Rows[hr] > 0; ap != bp {
		return ap
	}
	if a.Count[hr] != b.Count[hr] {
		return a.Count[hr] > b.Count[hr]
	}
	return a.Rows[hr] > b.Rows[hr]
}

// costAt is the work of slot k priced at p.
func (w instWork) costAt(p loadmodel.Prices, k int) float64 {
	var read float64
	if w.read != nil {
		read = w.read[k]
	}
	return p.Cost(w.rows[k], w.bytes[k], read)
}

// cost is work priced at p, per slot.
func (w instWork) cost(p loadmodel.Prices) []float64 {
	out := make([]float64, slots)
	for k := range out {
		out[k] = w.costAt(p, k)
	}
	return out
}

// unplannable names the live waves of views the utilisation model cannot plan (no
// cores, or no prices), each with why, and says it in one line naming them.
func unplannable(views map[string]*waveView, live []string) (map[string]string, string) {
	var noCores, noCPU, unpriced []string
	out := map[string]string{}
	for _, node := range live {
		v := views[node]
		switch {
		case v == nil || v.cores <= 0:
			noCores = append(noCores, node)
			out[node] = "no cpu.cores"
		case v.prices.Source == loadmodel.SourceNone:
			noCPU = append(noCPU, node)
			out[node] = "no prices"
			if u := v.prices.Unpriced; u != "" && !slices.Contains(unpriced, u) {
				unpriced = append(unpriced, u)
			}
		}
	}
	var why []string
	if len(noCores) > 0 {
		why = append(why, fmt.Sprintf("no cpu.cores from %s", list(noCores)))
	}
	if len(noCPU) > 0 {
		// A wave has no prices when it reports no wave.cpu_cores, or when its own work
		// never varied enough to fit and no other wave's fit gives a pool to price it
		// from: a fleet whose every wave reports its CPU can still be here.
		w := fmt.Sprintf("no prices for %s: it needs wave.cpu_cores, and its own work or another wave's varying over the fit's window to price work from", list(noCPU))
		if len(unpriced) > 0 {
			w += " (" + strings.Join(unpriced, "; ") + ")" // what the load model found
		}
		why = append(why, w)
	}
	return out, strings.Join(why, "; ")
}

// leftOutSilent is WaveLoad.LeftOut of a wave the balancer has alive whose figures
// stopped reaching the judge.
const leftOutSilent = "no recent figures"

// planModel is the model a plan is in, and the note that says why: utilisation when
// every live wave can be planned in it; still utilisation, over the others, when the
// waves that cannot are fewer than half (they are left out: their instances stay, they
// take none; a whole fleet in rows/s would move instances onto 2-core waves as onto
// 8-core ones because one new host had not reported its cores); else rows/s.
func planModel(views map[string]*waveView, live []string) (model string, leftOut map[string]string, note string) {
	out, why := unplannable(views, live)
	switch {
	case len(out) == 0:
		return api.ModelUtilisation, nil, ""
	case 2*len(out) < len(live):
		return api.ModelUtilisation, out, "left out of the plan (their instances stay, they take none): " + why
	}
	return api.ModelRows, nil, "planned in rows/s: " + why
}

// list names at most five nodes.
func list(nodes []string) string {
	if len(nodes) <= 5 {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:5], ", "), len(nodes)-5)
}

// planWave is the planner's wave for view v in the utilisation model: capacity, prices,
// and the base, the same in every slot: the process's base as its latest samples show
// it (loadmodel's BaseNow) plus the host's other work (its CPU, cpu.util, minus the
// process's, wave.cpu_cores: two levels smoothed alike, so their difference does not
// lag a move). The host's hour-of-day profile cannot serve, since it holds the
// instances it ran in past days (a wave that was drained would keep its old peaks as
// base); nor can the host's CPU minus its instances' costs now, which is what it was
// until the planner's first plans: the host's smoothed CPU still holds, for minutes,
// the instances that just left, whose costs the sum no longer counts, and the next plan
// saw the load it had just moved as base and moved more. A pegged wave (its CPU at its
// cores) hides its demand: that is at least what the host's last reading gives it,
// running beside its instances. Its error (Err) is how far its prices may miss what its work costs
// (errSpan of loadmodel's CostErr, a share of that cost), or where that is not known the
// price fit's RMSE: how far the CPU strays from what the prices explain.
func planWave(v *waveView, alive bool, running []instWork) rebalance.Wave {
	w := rebalance.Wave{Node: v.node, Alive: alive, Capacity: v.cores, Row: v.prices.Row, Byte: v.prices.Byte, Read: v.prices.Read,
		Base: v.prices.BaseNow, Err: v.prices.RMSE}
	if len(v.sharesWith) > 0 {
		w.Host = v.bootID
	}
	work := 0.0 // what the running instances cost now, at the prices
	for _, in := range running {
		work += in.costAt(v.prices, 0)
	}
	if v.prices.CostErr > 0 {
		w.Err = errSpan * v.prices.CostErr * work
	}
	if v.host == nil {
		return w
	}
	if v.costs.hasCPU {
		w.Base += max(0, v.host[0]-v.costs.cpu)
	}
	switch {
	case v.prices.Pegged:
		// By the host's last reading, not its smoothed CPU, which for minutes after a plan
		// relieved the wave still holds the instances that left: the next plans read them
		// as base (1.3 cores where the fit said 0.12) and said the wave was over its lines
		// by its own load (an outside trial).
		w.Base = max(w.Base, v.hostLast-work)
	case !v.costs.hasCPU:
		w.Base = max(w.Base, v.host[0]-work)
	}
	return w
}

// errSpan is how many standard errors of a wave's predicted cost its Err spans (the
// 95 % interval), of which its lines take half (rebalance's linesErrShare). The RMSE
// it replaced is the scatter of one reading, not the error of a prediction: on the
// simulator's homogeneous fleet, whose waves all lean on the pool (known to 1 %), half
// of it (0.02 cores a wave) kept the plans chasing their lines after the target, 69
// moves in all against 38; one standard error alone left seed 8's 24-wave fleet at
// 1.10× the greedy reference.
const errSpan = 2

// apiPrices is p as the API shows it. JSON has no infinity: an own fit that cannot say
// what its work costs (work_err infinite: its work costs nothing at its prices, or its
// samples are too few or collinear) shows work_err -1, and any other value that is not
// finite shows 0. An infinite work_err once failed a whole plan's answer ("encode
// response", 500), and the wave's balancer fell back to placing by instance counts.
func apiPrices(p loadmodel.Prices) api.Prices {
	workErr := p.WorkErr
	if math.IsInf(workErr, 1) {
		workErr = -1
	}
	return api.Prices{RowCores: finite(p.Row), ByteCores: finite(p.Byte), BinlogByteCores: finite(p.Read), BaseCores: finite(p.Base),
		BaseNowCores: finite(p.BaseNow),
		Source:       p.Source, Samples: p.Samples, R2: finite(p.R2), RMSE: finite(p.RMSE), Saturated: p.Saturated, WorkErr: finite(workErr),
		CostErr: finite(p.CostErr), PooledCollinear: p.PooledCollinear, PooledReadCollinear: p.PooledReadCollinear,
		PooledFromFits: p.PooledFromFits, Unpriced: p.Unpriced, PooledWhy: p.PooledWhy}
}

// finite is v, or 0 when v is NaN or infinite.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// peakOf is the largest of per-slot loads over cores, and its hour (-1: now).
func peakOf(load []float64, cores float64) (peak float64, hour int) {
	hour = -1
	for k, l := range load {
		if u := l / cores; k == 0 || u > peak {
			peak = u
			hour = k - 1
		}
	}
	return peak, hour
}

// instancesByNode lists, per wave node, the instances it reports work of this hour: the
// ones the historical analysis profiles.
func (j *Judge) instancesByNode() map[string][]string {
	out := map[string][]string{}
	for _, n := range j.inc.Nodes() {
		seen := map[string]bool{}
		for _, s := range n.Series {
			if id := s.Labels[labelInstance]; id != "" && (s.Name == metric.WaveTPS || s.Name == metric.WaveBytesPerS) && !seen[id] {
				seen[id] = true
				out[n.Node] = append(out[n.Node], id)
			}
		}
	}
	return out
}

// waveLoad is a wave node's load with the instances it runs, in the utilisation model:
// what GET /v1/nodes/{id} shows of it and what placements weigh it by.
type waveLoad struct {
	view  waveView
	insts []api.InstanceCost // the instances it runs, sorted, with their costs in cores
	// peak is the cores it uses at its peak slot, its base and its instances at its
	// prices (the planner's load: planWave), and hour that slot's UTC hour (-1: now);
	// both meaningful only with cores.
	peak float64
	hour int
	// total is its cores at every slot (the slots of peak), nil without cores: a shared
	// host's load is its waves' totals added slot by slot.
	total []float64
}

// waveLoadOf is the load in the utilisation model of the node of view v (viewOf), with
// the instances it runs, and the profiles of the last historical snapshot.
func (j *Judge) waveLoadOf(v waveView, prof *profiles) waveLoad {
	wl := waveLoad{view: v, insts: v.costs.running(), hour: -1}
	var running []instWork
	for i, c := range wl.insts {
		w := workOf(c.Instance, c, prof)
		running = append(running, w)
		cw := w.cost(v.prices)
		wl.insts[i].CoresNow, wl.insts[i].CoresPeak = cw[0], slices.Max(cw)
	}
	if v.cores <= 0 {
		return wl
	}
	pw := planWave(&wl.view, true, running)
	total := make([]float64, slots)
	for k := range total {
		total[k] = pw.Base
		for _, w := range running {
			total[k] += w.costAt(v.prices, k)
		}
	}
	peak, hour := peakOf(total, v.cores)
	wl.peak, wl.hour, wl.total = peak*v.cores, hour, total
	return wl
}

// utilNow is the host's utilisation now, and false when it reports no cpu.util or cores.
func (wl *waveLoad) utilNow() (float64, bool) {
	if wl.view.host == nil || wl.view.cores <= 0 {
		return 0, false
	}
	return wl.view.host[0] / wl.view.cores, true
}

// nodeLoad is node n's instances with their costs in cores, and its capacity and
// predicted utilisation (nil for a node without a wave), its peak counting the cores
// reserved by placements onto it not yet running (reserved), as the plans and the
// placements weigh them: a wave a placement had filled to its cap showed its peak
// without it. A down wave's instances are
// those its last report said it ran (asOfWave), less those another wave has claimed
// since: the instances GET /v1/rebalance has on it.
func (j *Judge) nodeLoad(n analysis.Node, down bool, hist *analysis.Snapshot, reserved float64) ([]api.InstanceCost, *api.NodeLoad) {
	view := j.viewOf(asOfWave(n))
	if !down && view.bootID != "" {
		j.shareWithSiblings(&view)
	}
	j.dropClaimedElsewhere(n, down, &view.costs)
	wl := j.waveLoadOf(view, j.profilesOf(hist))
	if !reportedWave(n) {
		return wl.insts, nil
	}
	v := &wl.view
	load := &api.NodeLoad{Cores: v.cores, Prices: apiPrices(v.prices), PeakHour: -1, SharesHostWith: v.sharesWith}
	if v.cores <= 0 {
		return wl.insts, load
	}
	load.UtilNow, _ = wl.utilNow()
	load.ReservedCores = reserved
	load.Peak, load.PeakHour = (wl.peak+reserved)/v.cores, wl.hour // a reservation weighs the same at every hour
	return wl.insts, load
}

// dropClaimedElsewhere takes out of the instances node n runs (c) those another node
// claims better (claim.beats): an instance that just moved, which the wave it left
// says running until its series stop (analysis.StoppedAfter), or one the cluster
// failed over from n's wave, which is down. Only an instance that is not in n's latest
// batch can be one, or any of a down wave's, so the other nodes are read only then, as
// the plan has them (asOfWave, resolveRuns): a down wave's claims count too.
func (j *Judge) dropClaimedElsewhere(n analysis.Node, down bool, c *nodeCosts) {
	var doubt []string
	for inst, cl := range c.claims {
		if down || cl.at.Before(n.LastBatchTS) {
			doubt = append(doubt, inst)
		}
	}
	if len(doubt) == 0 {
		return
	}
	for _, id := range j.inc.NodeIDs() {
		if id == n.Node {
			continue
		}
		other, ok := j.inc.Node(id)
		if !ok {
			continue
		}
		oc := costsOf(asOfWave(other), 0)
		for _, inst := range doubt {
			if cl, ok := oc.claims[inst]; ok && cl.beats(c.claims[inst]) {
				c.drop(inst)
			}
		}
	}
}
