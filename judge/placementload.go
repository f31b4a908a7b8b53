package judge

import (
	"fmt"
	"slices"
	"time"

	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/loadmodel"
	"github.com/binlake/binlake/lbplugins"
)

// Placements weigh a new instance in the unit the rebalancing plans use: utilisation,
// CPU cores over each wave's cores at its predicted peak (loadview.go). For the builds of
// the placement snapshot the judge computes, at most every placement.capacity_every,
// every wave's numbers the utilisation algorithm reads (lbplugins.Capacity, from the
// same waveLoadOf as GET /v1/nodes/{id}), the instances each wave reports running (a
// reservation ends once its wave reports its instance), and the fleet's typical
// instance, which stands for a new one whose request gives no hint. A placement then
// only prices the expected work.

// placementLoad is what one placement snapshot knows of the load model.
type placementLoad struct {
	// runs holds, per wave node, the instances it runs (costsOf).
	runs map[string]map[string]bool
	// typical is the expected work of a new instance without a hint.
	typical api.ExpectedWork
	// measured is the work of each instance a wave reports running, which a placement
	// of it without a hint (a move) weighs instead of the typical instance's.
	measured map[string]api.Work
	// runsOn is the wave that runs each of those instances: a placement of one weighs
	// nothing more there (lbplugins.Request.RunsOn).
	runsOn map[string]string
	// rowsPerByte is the measured instances' rows over their bytes (0: unknown), which
	// completes a hint of one of the two; readPerByte their binlog read over their bytes
	// published (0: unknown, or no agent reports the binlog read), which completes a hint
	// without the binlog.
	rowsPerByte, readPerByte float64
}

// capSet is one computation of the waves' loads in the load model.
type capSet struct {
	at   time.Time          // wall clock
	hist *analysis.Snapshot // the historical snapshot it used
	by   map[string]*lbplugins.Capacity
	load placementLoad
}

// capacities sets the Capacity of every wave node among vs and returns the rest of the
// load model's figures, from the last computation. A computation takes about ten times
// a build without it, and when the waves' prices are due for a refit, as they all are
// a minute after the last, far more: so a build after CapacityEvery, or after the
// historical snapshot changed, starts the next one in the background and takes the last
// ones meanwhile (a wave that appeared since has none: the utilisation algorithm
// filters it until then), and the build after it takes the new ones. The first build,
// and every build when CapacityEvery is zero, computes them itself. Callers hold
// building.
func (j *Judge) capacities(vs []*lbplugins.NodeView, hist *analysis.Snapshot) placementLoad {
	cs := j.caps.Load()
	switch {
	case cs == nil || j.o.CapacityEvery <= 0:
		cs = j.computeCapacities(hist)
		j.caps.Store(cs)
	case (cs.hist != hist || time.Since(cs.at) >= j.o.CapacityEvery) && j.capsBusy.CompareAndSwap(false, true):
		go func() {
			defer j.capsBusy.Store(false)
			j.caps.Store(j.computeCapacities(hist))
			j.changes.Add(1) // the next placement rebuilds the snapshot with them
		}()
	}
	for _, v := range vs {
		v.Capacity = cs.by[v.Node]
	}
	return cs.load
}

// computeCapacities computes every wave's capacity (lbplugins.Capacity) from the
// incremental analysis, the load model and the profiles of hist, with what the
// placements need besides.
func (j *Judge) computeCapacities(hist *analysis.Snapshot) *capSet {
	cs := &capSet{at: time.Now(), hist: hist, by: map[string]*lbplugins.Capacity{}}
	pl := placementLoad{runs: map[string]map[string]bool{}, measured: map[string]api.Work{}, runsOn: map[string]string{}}
	prof := j.profilesOf(hist)
	var rows, bytes, read []float64
	var sumRows, sumBytes, sumRead float64
	var views, live []*waveView
	now := j.now()
	for _, n := range j.inc.Nodes() {
		if !n.RunsWave() { // the placements' rule (NodeView.Wave): a stopped wave has no load to weigh
			continue
		}
		v := j.viewOf(n)
		views = append(views, &v)
		if ws, ok := j.waveStatusOf(n, now); ok && ws.Live {
			live = append(live, &v)
		}
	}
	shareHosts(live)                  // a wave that is down shares nothing, though placements still list it
	hosts := map[string][]hostShare{} // the waves of each shared host (shareHosts)
	costs := make([]*nodeCosts, len(views))
	for i, v := range views {
		costs[i] = &v.costs
	}
	resolveRuns(costs) // an instance that just moved weighs on the wave it went to
	for _, v := range views {
		wl := j.waveLoadOf(*v, prof)
		pl.runs[v.node] = wl.view.costs.runs
		for _, c := range wl.insts { // the instances the wave runs
			pl.measured[c.Instance] = api.Work{RowsPerS: c.RowsPerS, BytesPerS: c.BytesPerS, BinlogBytesPerS: c.BinlogBytesPerS}
			pl.runsOn[c.Instance] = v.node
			rows, bytes, read = append(rows, c.RowsPerS), append(bytes, c.BytesPerS), append(read, c.BinlogBytesPerS)
			sumRows, sumBytes, sumRead = sumRows+c.RowsPerS, sumBytes+c.BytesPerS, sumRead+c.BinlogBytesPerS
		}
		c := &lbplugins.Capacity{Cores: wl.view.cores, RowCores: wl.view.prices.Row, ByteCores: wl.view.prices.Byte, ReadCores: wl.view.prices.Read,
			Priced: wl.view.prices.Source != loadmodel.SourceNone, Unpriced: wl.view.prices.Unpriced,
			PeakCores: wl.peak, PeakHour: wl.hour}
		c.UtilNow, c.HasUtilNow = wl.utilNow()
		cs.by[v.node] = c
		if len(v.sharesWith) > 0 && wl.total != nil {
			hosts[v.bootID] = append(hosts[v.bootID], hostShare{c, wl.total, wl.view.cores})
		}
	}
	holdHosts(hosts)
	if sumRows > 0 && sumBytes > 0 {
		pl.rowsPerByte = sumRows / sumBytes
	}
	if sumBytes > 0 {
		pl.readPerByte = sumRead / sumBytes
	}
	pl.typical = api.ExpectedWork{Source: api.ExpectedNone,
		Note: "no hint, and no instance measured anywhere to learn a typical one from: the instance is priced at nothing"}
	if len(rows) > 0 {
		w, _ := medianWork(rows, bytes, read) // idle, the typical instance still is the fleet's
		pl.typical = api.ExpectedWork{Work: w, Source: api.ExpectedTypical,
			Note: fmt.Sprintf("no hint: the median rows/s, bytes/s and binlog bytes read/s of the %d instances the waves run", len(rows))}
	}
	cs.load = pl
	return cs
}

// hostShare is one wave's part of a shared host: its capacity in the snapshot, its
// cores at every slot and its share of the host's cores.
type hostShare struct {
	c     *lbplugins.Capacity
	total []float64
	cores float64
}

// holdHosts sets on every wave of a shared host the host's cores and its peak (the
// slot where its waves' loads add up highest), so that the utilisation algorithm holds
// the host to max_utilisation as the plans do (internal/rebalance/sharedhost.go), not
// each wave's share of it.
func holdHosts(hosts map[string][]hostShare) {
	for id, group := range hosts {
		if len(group) < 2 {
			continue
		}
		sum := make([]float64, len(group[0].total))
		cores := 0.0
		for _, g := range group {
			cores += g.cores
			for k, x := range g.total {
				sum[k] += x
			}
		}
		peak := slices.Max(sum)
		for _, g := range group {
			g.c.Host, g.c.HostCores, g.c.HostPeakCores = id, cores, peak
		}
	}
}

// median is the median of xs (sorting it); xs is not empty.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// medianWork is the typical instance of the work of instances (rows/s, bytes/s and
// binlog bytes/s alike indexed, sorted in place): the median of each, and false when
// there is none or it is idle.
func medianWork(rows, bytes, read []float64) (api.Work, bool) {
	if len(rows) == 0 {
		return api.Work{}, false
	}
	w := api.Work{RowsPerS: median(rows), BytesPerS: median(bytes), BinlogBytesPerS: median(read)}
	return w, w.RowsPerS > 0 || w.BytesPerS > 0
}

// expected is the work a placement weighs the new instance by: the request's hint
// (checked by checkPlacement: finite, ≥ 0), one of its two rates completed from the
// fleet's ratio and its binlog read, when it gives none, from the fleet's ratio of
// binlog read to bytes published, else the instance's own work when a wave runs it (a
// move), else the typical instance.
func (pl *placementLoad) expected(h *api.WorkHint, instance string) api.ExpectedWork {
	e := pl.expectedPublished(h, instance)
	switch {
	case h == nil:
	case h.BinlogBytesPerS != nil:
		e.BinlogBytesPerS = *h.BinlogBytesPerS
	case pl.readPerByte > 0:
		e.BinlogBytesPerS = e.BytesPerS * pl.readPerByte
		if e.Note != "" {
			e.Note += "; "
		}
		e.Note += fmt.Sprintf("binlog read from the bytes/s at the fleet's %.3g binlog bytes read per byte published", pl.readPerByte)
	}
	return e
}

// expectedPublished is expected's rows/s and bytes/s published.
func (pl *placementLoad) expectedPublished(h *api.WorkHint, instance string) api.ExpectedWork {
	switch {
	case h == nil:
		if w, ok := pl.measured[instance]; ok {
			return api.ExpectedWork{Work: w, Source: api.ExpectedMeasured,
				Note: "no hint: the instance's own work, as the wave that runs it reports it"}
		}
		return pl.typical
	case h.RowsPerS != nil && h.BytesPerS != nil:
		return api.ExpectedWork{Work: api.Work{RowsPerS: *h.RowsPerS, BytesPerS: *h.BytesPerS}, Source: api.ExpectedHint}
	case h.BytesPerS != nil:
		e := api.ExpectedWork{Work: api.Work{BytesPerS: *h.BytesPerS}, Source: api.ExpectedHint,
			Note: "rows/s unknown: no instance measured to learn the fleet's rows per byte from; counted as 0"}
		if pl.rowsPerByte > 0 {
			e.RowsPerS = *h.BytesPerS * pl.rowsPerByte
			e.Note = fmt.Sprintf("rows/s from the bytes/s at the fleet's %.4g bytes per row", 1/pl.rowsPerByte)
		}
		return e
	default:
		e := api.ExpectedWork{Work: api.Work{RowsPerS: *h.RowsPerS}, Source: api.ExpectedHint,
			Note: "bytes/s unknown: no instance measured to learn the fleet's bytes per row from; counted as 0"}
		if pl.rowsPerByte > 0 {
			e.BytesPerS = *h.RowsPerS / pl.rowsPerByte
			e.Note = fmt.Sprintf("bytes/s from the rows/s at the fleet's %.4g bytes per row", 1/pl.rowsPerByte)
		}
		return e
	}
}

// reports reports whether node reports running instance (its reservation is over).
func (pl *placementLoad) reports(node, instance string) bool { return pl.runs[node][instance] }

// coresOn is work's cost on node i of s at its prices, in cores; 0 when it has none.
func coresOn(s *lbplugins.Snapshot, i int, w api.Work) float64 {
	c := s.Views[i].Capacity
	if c == nil || !c.Priced {
		return 0
	}
	return c.Cost(lbplugins.Work{Rows: w.RowsPerS, Bytes: w.BytesPerS, Read: w.BinlogBytesPerS})
}
