package fleetsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Wave is one simulated wave host: its capacity and its true cost prices. The wave
// process uses RowPrice·Σrows/s + BytePrice·Σbytes/s + ReadPrice·Σbinlog bytes/s + Idle
// cores for the instances it runs (rows and bytes published, binlog read); the prices
// differ between waves (each host has a speed factor), which is what a judge that learns
// per-wave prices can find and one that prices every wave alike cannot.
type Wave struct {
	Node  string  `json:"node"`
	Cores int     `json:"cores"`
	Speed float64 `json:"speed"` // the host's speed factor: its prices are the fleet's times this
	// RowPrice is cores per row/s, BytePrice cores per byte/s published, ReadPrice cores
	// per binlog byte/s read, Idle the cores of the process with no instance.
	RowPrice  float64 `json:"row_price"`
	BytePrice float64 `json:"byte_price"`
	ReadPrice float64 `json:"read_price"`
	Idle      float64 `json:"idle_cores"`
	// Host names the host when the wave shares it with others (Options.HostShare; ""
	// on a host of its own), and Other is its equal part of that host's other work, in
	// cores: load on the host that no wave process uses, which is the wave's to carry
	// all the same (the judge gives each wave of a host an equal part of it). Every
	// agent on the host reports the host's cores and CPU, and its boot id.
	Host  string  `json:"host,omitempty"`
	Other float64 `json:"other_cores,omitempty"`
}

// fixed is the wave's load without any instance: its idle process and its part of its
// host's other work.
func (w Wave) fixed() float64 { return w.Idle + w.Other }

// Instance is one simulated capture instance: its daily mean rows/s, the mean size of
// its rows, what it reads of its source's binlog per byte it publishes, and its diurnal
// cycle (1 + Amp·cos(2π(h − PeakHour)/24), h the UTC hour).
type Instance struct {
	ID       string  `json:"id"`
	Rows     float64 `json:"rows_per_s"`
	RowBytes float64 `json:"row_bytes"`
	// ReadRatio is the binlog bytes read per byte published: 1 when the instance's
	// filters keep its whole source, more when they keep part of it (the other tables'
	// events are read all the same).
	ReadRatio float64 `json:"read_ratio"`
	Amp       float64 `json:"amp"`
	PeakHour  float64 `json:"peak_hour"`
}

// Fleet is a generated fleet and its initial assignment (Initial[i] is the index in
// Waves of the wave instance i starts on).
type Fleet struct {
	Waves     []Wave     `json:"waves"`
	Instances []Instance `json:"instances"`
	Initial   []int      `json:"initial"`
}

// omega is the diurnal angular frequency, per hour.
const omega = 2 * math.Pi / 24

// hourOf is t's UTC hour of day, fractional.
func hourOf(t time.Time) float64 {
	t = t.UTC()
	return float64(t.Hour()) + float64(t.Minute())/60 + (float64(t.Second())+float64(t.Nanosecond())/1e9)/3600
}

// Diurnal is the instance's rate multiplier at UTC hour h.
func (in Instance) Diurnal(h float64) float64 {
	return 1 + in.Amp*math.Cos(omega*(h-in.PeakHour))
}

// Base is what the instance costs w, in cores, at its daily mean rate.
func (w Wave) Base(in Instance) float64 {
	return in.Rows * w.perRow(in)
}

// perRow is what one row/s of in costs w: the row, its bytes published and the binlog
// read with them. Without a read price the last term is an exact 0, so the costs are
// bit for bit those of the fleets before reading was modelled.
func (w Wave) perRow(in Instance) float64 {
	return w.RowPrice + w.BytePrice*in.RowBytes + w.ReadPrice*in.RowBytes*in.ReadRatio
}

// load is a wave's CPU demand over the day in closed form: c + x·cos(ωh) + y·sin(ωh)
// cores at UTC hour h. Every instance's cost is a cosine of the same period, so their
// sum is one too, and loads add component by component: the day's peak of any set of
// instances is exact and costs O(1).
type load struct{ c, x, y float64 }

// contrib is what instance in adds to wave w's load.
func contrib(w Wave, in Instance) load {
	b := w.Base(in)
	return load{c: b, x: b * in.Amp * math.Cos(omega*in.PeakHour), y: b * in.Amp * math.Sin(omega*in.PeakHour)}
}

func (l load) plus(o load) load  { return load{l.c + o.c, l.x + o.x, l.y + o.y} }
func (l load) minus(o load) load { return load{l.c - o.c, l.x - o.x, l.y - o.y} }

// at is the load at UTC hour h.
func (l load) at(h float64) float64 { return l.c + l.x*math.Cos(omega*h) + l.y*math.Sin(omega*h) }

// peak is the load's maximum over the day.
func (l load) peak() float64 { return l.c + math.Hypot(l.x, l.y) }

// Generate builds the fleet o describes: the same options and seed give the same fleet.
// Rates are scaled so that the fleet's mean utilisation at o.Now (its total demand over
// its total cores, whatever the assignment, at the fleet's mean prices) is
// o.TargetUtil.
func Generate(o Options) (*Fleet, error) {
	if err := o.validateFleet(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x666c656574)) // "fleet"
	f := &Fleet{}
	var cores []int
	for _, c := range o.Cores {
		for range c.Waves {
			cores = append(cores, c.Cores)
		}
	}
	// Shuffled, so that neither names nor the round-robin start say a wave's class.
	r.Shuffle(len(cores), func(i, j int) { cores[i], cores[j] = cores[j], cores[i] })
	width := len(fmt.Sprint(len(cores) - 1))
	var totalCores, totalIdle float64
	var mean Wave // the fleet's mean prices, weighted by cores: where a balanced fleet's load goes
	for i, c := range cores {
		speed := math.Exp(o.SpeedSigma * r.NormFloat64())
		w := Wave{Node: fmt.Sprintf("%swave-%0*d", o.Prefix, width, i), Cores: c, Speed: speed,
			RowPrice:  o.RowPrice * speed,
			BytePrice: o.BytePrice * speed * math.Exp(o.SpeedSigma/2*r.NormFloat64()),
			ReadPrice: o.ReadPrice * speed,
			Idle:      o.IdleCores * speed}
		f.Waves = append(f.Waves, w)
		totalCores += float64(c)
		totalIdle += w.Idle
		mean.RowPrice += w.RowPrice * float64(c)
		mean.BytePrice += w.BytePrice * float64(c)
		mean.ReadPrice += w.ReadPrice * float64(c)
	}
	mean.RowPrice, mean.BytePrice, mean.ReadPrice = mean.RowPrice/totalCores, mean.BytePrice/totalCores, mean.ReadPrice/totalCores

	regions := make([]float64, o.DiurnalRegions)
	first := r.Float64() * 24
	for i := range regions {
		regions[i] = math.Mod(first+float64(i)*24/float64(len(regions)), 24)
	}
	width = len(fmt.Sprint(o.Instances - 1))
	h0 := hourOf(o.Now)
	reads := readRatios(o)
	var demand float64
	for i := range o.Instances {
		in := Instance{ID: fmt.Sprintf("%sinst-%0*d", o.Prefix, width, i),
			Rows:      math.Exp(o.RowsSigma * r.NormFloat64()),
			RowBytes:  min(max(o.SizeMedian*math.Exp(o.SizeSigma*r.NormFloat64()), minRowBytes), maxRowBytes),
			ReadRatio: reads(),
			Amp:       o.DiurnalAmplitude * (0.3 + 0.7*r.Float64()),
			PeakHour:  math.Mod(regions[r.IntN(len(regions))]+1.5*r.NormFloat64()+48, 24)}
		f.Instances = append(f.Instances, in)
		// Diurnal·rows first, then the price: the order the fleets were always scaled in,
		// so that their rates stay the same to the last bit.
		demand += in.Diurnal(h0) * in.Rows * mean.perRow(in)
	}
	scale := (o.TargetUtil*totalCores - totalIdle) / demand
	if !(scale > 0) {
		return nil, fmt.Errorf("target utilisation %.2f is below what the waves' idle processes use alone (%.2f)", o.TargetUtil, totalIdle/totalCores)
	}
	for i := range f.Instances {
		f.Instances[i].Rows *= scale
	}
	shareHosts(f, o)
	f.Initial = make([]int, len(f.Instances))
	for i := range f.Initial {
		f.Initial[i] = i % len(f.Waves) // round-robin by count
	}
	return f, nil
}

// readRatios returns the next instance's ReadRatio at each call. Its draws come from a
// source of their own, seeded from the fleet's seed, so that the fleet's stream draws
// what it always did: a fleet without filtered instances is the one it was before
// reading was modelled, and with them the same fleet but for what its instances read
// (and the rates' common scale, which the read cost enters). Both draws are made for
// every instance, so that the share does not shift which ratio the others get.
func readRatios(o Options) func() float64 {
	r := rand.New(rand.NewPCG(o.Seed, 0x72656164)) // "read"
	return func() float64 {
		filtered := r.Float64() < o.FilteredShare
		ratio := min(max(o.ReadRatioMedian*math.Exp(o.ReadRatioSigma*r.NormFloat64()), 1), maxReadRatio)
		if !filtered {
			return 1
		}
		return ratio
	}
}

// Row sizes are clamped to what a binlog row event plausibly carries, read ratios to a
// source at most a thousand times what an instance publishes of it.
const (
	minRowBytes  = 16
	maxRowBytes  = 1 << 20
	maxReadRatio = 1000
)

// shareHosts puts the waves on hosts of o.HostShare waves each, waves of one capacity
// class together in the order of their names (a class's last host may have fewer; a
// wave left alone keeps a host of its own), and gives each host other work of
// o.HostOther of its cores on average (uniform from none to twice that), shared equally
// by its waves. Its draws come from a source of their own, so that the fleet's own
// stream, and a fleet with one wave per host, stay what they were.
func shareHosts(f *Fleet, o Options) {
	if o.HostShare < 2 {
		return
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x686f7374)) // "host"
	byCores := map[int][]int{}
	var classes []int
	for w, wave := range f.Waves {
		if byCores[wave.Cores] == nil {
			classes = append(classes, wave.Cores)
		}
		byCores[wave.Cores] = append(byCores[wave.Cores], w)
	}
	slices.Sort(classes)
	n := 0
	for _, c := range classes {
		ws := byCores[c]
		for from := 0; from < len(ws); from += o.HostShare {
			group := ws[from:min(from+o.HostShare, len(ws))]
			other := o.HostOther * 2 * r.Float64() * float64(c*len(group))
			if len(group) < 2 {
				continue
			}
			host := fmt.Sprintf("%shost-%02d", o.Prefix, n)
			n++
			for _, w := range group {
				f.Waves[w].Host, f.Waves[w].Other = host, other/float64(len(group))
			}
		}
	}
}

// hostsOf is each wave's host-mates with itself (indexes into f.Waves, in order), nil
// for a wave on a host of its own.
func hostsOf(f *Fleet) [][]int {
	byHost := map[string][]int{}
	for w, wave := range f.Waves {
		if wave.Host != "" {
			byHost[wave.Host] = append(byHost[wave.Host], w)
		}
	}
	out := make([][]int, len(f.Waves))
	for w, wave := range f.Waves {
		if wave.Host != "" {
			out[w] = byHost[wave.Host]
		}
	}
	return out
}
