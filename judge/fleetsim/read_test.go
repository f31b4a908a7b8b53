package fleetsim

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// readingOptions are smallOptions where reading costs and a share of the instances are
// filtered.
func readingOptions(share float64) Options {
	o := smallOptions()
	o.ReadPrice, o.FilteredShare = 1e-8, share
	return o
}

// TestReadingOffIsTheFleetBefore: without a read price the fleet and its batches are,
// to the last bit, those generated before reading was modelled (the fingerprints were
// taken from that code, and again once a wave's batches stopped carrying a departed
// instance's zeros, the one change to them since): the existing benchmarks' figures
// rest on them. Every instance
// reads what it publishes and no batch carries wave.binlog_bytes_per_s.
func TestReadingOffIsTheFleetBefore(t *testing.T) {
	for _, tc := range []struct {
		preset string
		seed   uint64
		want   string
	}{
		{"hetero", 1, "0db3e1641c68f20ad4947e18f581acb2b206d4327c18a4ce57a92790fb4f9021"},
		{"hetero", 2, "4cc2beb229cd8a9eea5f4acf97ce57e4360028f1659794ac02706ad63bf5a672"},
		{"homogeneous", 1, "3c2c4079aa61165bcc31bbadd51bcea25087dced38e651d5f43ec9470237830e"},
		{"homogeneous", 2, "df4e41e6d4adf96b4fe2e5d171e1afa91d620fead06886a7f0511d70262c7c24"},
		{"small", 1, "9c0665ef6d922ab9a6c1ed9b2e0543d546791d13d189feffc54f628f7d8a542a"},
	} {
		t.Run(fmt.Sprint(tc.preset, "-", tc.seed), func(t *testing.T) {
			o := smallOptions()
			if tc.preset != "small" {
				var err error
				if o, err = Preset(tc.preset); err != nil {
					t.Fatal(err)
				}
			}
			o.Seed = tc.seed
			f, err := Generate(o)
			if err != nil {
				t.Fatal(err)
			}
			if got := fingerprint(f, o); got != tc.want {
				t.Errorf("fingerprint %s, want %s: the fleet or its batches are not those before reading was modelled", got, tc.want)
			}
			for _, in := range f.Instances {
				if in.ReadRatio != 1 {
					t.Fatalf("instance %s reads %v× what it publishes, want 1 (none filtered)", in.ID, in.ReadRatio)
				}
			}
			for _, w := range f.Waves {
				if w.ReadPrice != 0 {
					t.Fatalf("wave %s reads at %v cores per byte/s, want 0", w.Node, w.ReadPrice)
				}
			}
			s := newState(f, o)
			s.move(0, 1, o.Now)
			for w := range f.Waves {
				for _, p := range s.batch(w, o.Now, time.Minute).Points {
					if p.Name == metric.WaveBinlogBytesPerS {
						t.Fatalf("wave %d reports %s %v without a read price", w, p.Name, p.Value)
					}
				}
			}
			// The read ratio's own settings draw nothing the fleet uses while none is
			// filtered.
			o.ReadRatioMedian, o.ReadRatioSigma = 50, 2
			g, err := Generate(o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f, g) || fingerprint(g, o) != tc.want {
				t.Error("another read ratio median and σ changed a fleet without filtered instances")
			}
		})
	}
}

// fingerprint hashes what a fleet and its batches were before reading was modelled:
// every field of its waves and instances but the read ones, its initial assignment, and
// every wave's batches at a few ticks around a move (so that a departed instance's
// points are in). Floats go in by their bits: equal means identical.
func fingerprint(f *Fleet, o Options) string {
	h := sha256.New()
	bits := func(v float64) { fmt.Fprintf(h, "%x;", math.Float64bits(v)) }
	for _, w := range f.Waves {
		fmt.Fprintf(h, "%s %d;", w.Node, w.Cores)
		for _, v := range []float64{w.Speed, w.RowPrice, w.BytePrice, w.Idle} {
			bits(v)
		}
	}
	for _, in := range f.Instances {
		fmt.Fprintf(h, "%s;", in.ID)
		for _, v := range []float64{in.Rows, in.RowBytes, in.Amp, in.PeakHour} {
			bits(v)
		}
	}
	fmt.Fprint(h, f.Initial)
	s := newState(f, o)
	for k, at := range []time.Time{o.Now.Add(-time.Hour), o.Now, o.Now.Add(7 * time.Minute)} {
		if k == 1 {
			s.move(0, 1, at)
		}
		for w := range f.Waves {
			hashBatch(h, s, w, at)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func hashBatch(h hash.Hash, s *state, w int, at time.Time) {
	b := s.batch(w, at, time.Minute)
	fmt.Fprintf(h, "%s %d %x;", b.Node, b.TS.UnixNano(), math.Float64bits(b.IntervalS))
	for _, p := range b.Points {
		fmt.Fprintf(h, "%s %x %s %s;", p.Name, math.Float64bits(p.Value), p.Labels["instance"], p.Labels["state"])
	}
}

// TestFilteredInstances: about FilteredShare of the instances read more than they
// publish, around ReadRatioMedian, none less; the rest of the fleet is the unfiltered
// one's but for the rates' common scale; and the rates are scaled so that the demand at
// Now, reading included, is TargetUtil of the cores.
func TestFilteredInstances(t *testing.T) {
	for _, tc := range []struct {
		share  float64
		lo, hi int // instances with a ratio above 1, of 400
	}{
		{0.5, 160, 240},
		{0.2, 50, 110},
		{1, 380, 400}, // a ratio under 1 is clamped to 1: some 2 % at median 5, σ 0.8
	} {
		t.Run(fmt.Sprint(tc.share), func(t *testing.T) {
			o := DefaultOptions()
			plain, err := Generate(o)
			if err != nil {
				t.Fatal(err)
			}
			o.ReadPrice, o.FilteredShare = 1e-8, tc.share
			f, err := Generate(o)
			if err != nil {
				t.Fatal(err)
			}
			var ratios []float64
			for _, in := range f.Instances {
				switch {
				case in.ReadRatio < 1:
					t.Errorf("instance %s reads %v× what it publishes: want at least 1", in.ID, in.ReadRatio)
				case in.ReadRatio > 1:
					ratios = append(ratios, in.ReadRatio)
				}
			}
			if n := len(ratios); n < tc.lo || n > tc.hi {
				t.Errorf("%d of %d instances read more than they publish, want %d–%d", n, len(f.Instances), tc.lo, tc.hi)
			}
			slices.Sort(ratios)
			if m := ratios[len(ratios)/2]; m < 0.75*o.ReadRatioMedian || m > 1.33*o.ReadRatioMedian {
				t.Errorf("the filtered instances' median ratio %.2f, want near %v", m, o.ReadRatioMedian)
			}
			sameButReading(t, plain, f)
			mw := meanWave(f)
			var demand, cores float64
			for _, w := range f.Waves {
				demand += w.Idle
				cores += float64(w.Cores)
			}
			for _, in := range f.Instances {
				demand += contrib(mw, in).at(hourOf(o.Now))
			}
			if got := demand / cores; math.Abs(got-o.TargetUtil) > 1e-9 {
				t.Errorf("mean utilisation at Now %.6f with reading, want %.2f", got, o.TargetUtil)
			}
		})
	}
}

// sameButReading fails unless f is plain with reading: the same waves but for their
// read price, the same instances but for their ratio and a common scale of their rates.
func sameButReading(t *testing.T, plain, f *Fleet) {
	t.Helper()
	for w := range f.Waves {
		wv := f.Waves[w]
		if wv.ReadPrice <= 0 {
			t.Errorf("wave %s: read price %v", wv.Node, wv.ReadPrice)
		}
		wv.ReadPrice = 0
		if wv != plain.Waves[w] {
			t.Errorf("wave %d: %+v, without reading %+v", w, f.Waves[w], plain.Waves[w])
		}
	}
	scale := f.Instances[0].Rows / plain.Instances[0].Rows
	for i, in := range f.Instances {
		p := plain.Instances[i]
		if math.Abs(in.Rows/p.Rows-scale) > 1e-12*scale {
			t.Errorf("instance %s: rows %v, %v without reading: not the common scale %v", in.ID, in.Rows, p.Rows, scale)
		}
		in.Rows, in.ReadRatio = p.Rows, p.ReadRatio
		if in != p {
			t.Errorf("instance %d: %+v, without reading %+v", i, f.Instances[i], p)
		}
	}
	if !reflect.DeepEqual(f.Initial, plain.Initial) {
		t.Error("the initial assignment changed")
	}
}

// TestBaseIncludesReading: an instance's cost on a wave is its rows', its bytes' and
// the binlog it reads for them.
func TestBaseIncludesReading(t *testing.T) {
	w := Wave{RowPrice: 10e-6, BytePrice: 5e-9, ReadPrice: 20e-9}
	for _, tc := range []struct {
		name string
		in   Instance
		w    Wave
		want float64 // cores
	}{
		// 100 rows/s of 400 bytes: rows 1e-3, bytes 2e-4, reading 40,000 bytes/s 8e-4.
		{"unfiltered", Instance{Rows: 100, RowBytes: 400, ReadRatio: 1}, w, 1e-3 + 2e-4 + 8e-4},
		{"reads 5×", Instance{Rows: 100, RowBytes: 400, ReadRatio: 5}, w, 1e-3 + 2e-4 + 40e-4},
		{"reading free", Instance{Rows: 100, RowBytes: 400, ReadRatio: 5}, Wave{RowPrice: 10e-6, BytePrice: 5e-9}, 1e-3 + 2e-4},
	} {
		if got := tc.w.Base(tc.in); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Base %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBatchReportsReading: with a read price the agents report each instance's binlog
// read (what it publishes times its ratio) and the wave's sum, none of a departed
// instance, and the wave's CPU is its idle process plus every instance's rows, bytes and
// reading.
func TestBatchReportsReading(t *testing.T) {
	o := readingOptions(0.5)
	o.Cores = []CoreClass{{8, 1}}
	o.CPUNoise, o.RateJitter = 0, 0
	f, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	w := f.Waves[0]
	h := hourOf(o.Now)
	want, read := w.Idle, 0.0
	var filtered int
	for _, in := range f.Instances {
		rows := in.Rows * in.Diurnal(h)
		want += w.RowPrice*rows + w.BytePrice*rows*in.RowBytes + w.ReadPrice*rows*in.RowBytes*in.ReadRatio
		read += rows * in.RowBytes * in.ReadRatio
		if in.ReadRatio > 1 {
			filtered++
		}
	}
	if filtered == 0 {
		t.Fatal("no filtered instance: nothing is read beyond what is published")
	}
	b := newState(f, o).batch(0, o.Now, time.Minute)
	byName, perInstance := pointsOf(b)
	if got := byName[metric.WaveCPUCores]; math.Abs(got-want) > 1e-9 {
		t.Errorf("wave.cpu_cores %v, want idle + rows + bytes + reading %v", got, want)
	}
	// One wave holds the fleet: its demand at Now is what the rates were scaled to.
	if got := byName[metric.WaveCPUCores] / 8; math.Abs(got-o.TargetUtil) > 1e-9 {
		t.Errorf("utilisation at Now %v, want the target %v (the read cost scaled in)", got, o.TargetUtil)
	}
	if got := byName[metric.WaveBinlogBytesPerS]; math.Abs(got-read) > 1e-9*read {
		t.Errorf("wave.binlog_bytes_per_s %v, want %v", got, read)
	}
	for _, in := range f.Instances {
		p := perInstance[in.ID]
		if got, want := p[metric.WaveBinlogBytesPerS], p[metric.WaveBytesPerS]*in.ReadRatio; math.Abs(got-want) > 1e-9*want {
			t.Errorf("instance %s: wave.binlog_bytes_per_s %v, want %v (published × %v)", in.ID, got, want, in.ReadRatio)
		}
	}

	// Nothing of a departed instance, its read no more than its rows and bytes.
	o = readingOptions(0.5)
	f, err = Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	s := newState(f, o)
	s.move(0, 1, o.Now)
	_, perInstance = pointsOf(s.batch(0, o.Now, time.Minute))
	if gone, ok := perInstance[f.Instances[0].ID]; ok {
		t.Errorf("the instance that moved away: %v, want nothing of it", gone)
	}
}

// pointsOf splits a batch's points into the unlabelled ones by name and each
// instance's by name.
func pointsOf(b metric.Batch) (map[string]float64, map[string]map[string]float64) {
	byName, perInstance := map[string]float64{}, map[string]map[string]float64{}
	for _, p := range b.Points {
		inst := p.Labels["instance"]
		if inst == "" {
			byName[p.Name] = p.Value
			continue
		}
		if perInstance[inst] == nil {
			perInstance[inst] = map[string]float64{}
		}
		perInstance[inst][p.Name] = p.Value
	}
	return byName, perInstance
}

// TestReferencesPriceReading: the greedy reference orders instances by their true cost
// with reading, and the truth export carries it.
func TestReferencesPriceReading(t *testing.T) {
	o := readingOptions(0.5)
	f, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	mw := meanWave(f)
	if mw.ReadPrice <= 0 {
		t.Fatalf("the fleet's mean wave has no read price: %+v", mw)
	}
	tr := truthOf(f, 12, 0, 0)
	for i, in := range f.Instances {
		for w, wave := range f.Waves {
			if got, want := tr.Instances[i].On[w][0], wave.Base(in); got != want {
				t.Fatalf("truth of instance %d on wave %d: %v, want its cost with reading %v", i, w, got, want)
			}
		}
	}
}

// TestValidateReading: bad reading options are refused naming them.
func TestValidateReading(t *testing.T) {
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.ReadPrice = -1e-8 }, "read price -1e-08: want 0–1"},
		{func(o *Options) { o.ReadPrice, o.FilteredShare = 1e-8, 1.5 }, "filtered share 1.5: want 0–1"},
		{func(o *Options) { o.ReadPrice, o.ReadRatioMedian = 1e-8, 0.5 }, "read ratio median 0.5: want 1–1000"},
		{func(o *Options) { o.ReadRatioSigma = -1 }, "read ratio sigma -1"},
		{func(o *Options) { o.FilteredShare = 0.5 }, "give a read price too"},
		{func(o *Options) { o.RowPrice, o.BytePrice, o.ReadPrice = 0, 0, 0 }, "cost nothing"},
	} {
		o := DefaultOptions()
		tc.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate: %v", tc.want, err)
		}
	}
	// Reading alone is a cost.
	o := DefaultOptions()
	o.RowPrice, o.BytePrice, o.ReadPrice = 0, 0, 1e-8
	if err := o.Validate(); err != nil {
		t.Errorf("reading priced alone: %v", err)
	}
}

// TestFilteredPreset: the filtered preset is hetero's fleet with reading, where reading
// costs a filtered instance of the median ratio and row size about what publishing does.
func TestFilteredPreset(t *testing.T) {
	hetero, err := Preset("hetero")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Preset("filtered")
	if err != nil {
		t.Fatal(err)
	}
	if o.FilteredShare != 0.5 || o.ReadRatioMedian != 5 || o.ReadRatioSigma != 0.8 || o.ReadPrice <= 0 {
		t.Fatalf("filtered preset %+v", o)
	}
	reading := o.ReadPrice * o.SizeMedian * o.ReadRatioMedian
	publishing := o.RowPrice + o.BytePrice*o.SizeMedian
	if r := reading / publishing; r < 0.7 || r > 1.4 {
		t.Errorf("reading costs a median filtered instance %.2f× what publishing does, want about as much", r)
	}
	o.ReadPrice, o.FilteredShare = 0, 0
	if !reflect.DeepEqual(o, hetero) {
		t.Errorf("filtered without reading %+v, want hetero's %+v", o, hetero)
	}
}
