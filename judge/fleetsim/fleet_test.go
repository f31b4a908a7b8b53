package fleetsim

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func smallOptions() Options {
	o := DefaultOptions()
	o.Cores = []CoreClass{{2, 2}, {4, 2}, {8, 2}}
	o.Instances = 40
	return o
}

// TestGenerateDeterministic: the same options and seed give the same fleet and the same
// batches, built in any order; another seed gives another fleet.
func TestGenerateDeterministic(t *testing.T) {
	o := smallOptions()
	a, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two fleets of the same seed differ")
	}
	at := o.Now.Add(-3 * time.Minute)
	sa, sb := newState(a, o), newState(b, o)
	for w := len(a.Waves) - 1; w >= 0; w-- { // b's batches in the other order
		sb.batch(w, at, time.Minute)
	}
	for w := range a.Waves {
		if ba, bb := sa.batch(w, at, time.Minute), sb.batch(w, at, time.Minute); !reflect.DeepEqual(ba, bb) {
			t.Fatalf("wave %d's batches of the same seed and time differ:\n%+v\n%+v", w, ba, bb)
		}
	}
	o.Seed++
	c, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Instances, c.Instances) || reflect.DeepEqual(a.Waves, c.Waves) {
		t.Fatal("seeds 1 and 2 gave the same fleet")
	}
}

// TestGenerateShape: the mix's waves, the instances round-robin, and rates scaled so that
// the fleet's demand at Now, at its mean prices, is TargetUtil of its cores.
func TestGenerateShape(t *testing.T) {
	o := smallOptions()
	o.TargetUtil = 0.55
	f, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	byCores := map[int]int{}
	var cores, idle float64
	for _, w := range f.Waves {
		byCores[w.Cores]++
		cores += float64(w.Cores)
		idle += w.Idle
		if !strings.HasPrefix(w.Node, "wave-") || w.RowPrice <= 0 || w.BytePrice <= 0 {
			t.Errorf("wave %+v", w)
		}
	}
	if !reflect.DeepEqual(byCores, map[int]int{2: 2, 4: 2, 8: 2}) {
		t.Errorf("waves by cores %v, want 2 of each of 2, 4 and 8", byCores)
	}
	counts := make([]int, len(f.Waves))
	for _, w := range f.Initial {
		counts[w]++
	}
	for w, n := range counts {
		if n < 6 || n > 7 {
			t.Errorf("wave %d starts with %d instances, want 40/6 round-robin (6 or 7)", w, n)
		}
	}
	mw := meanWave(f)
	demand := idle
	for _, in := range f.Instances {
		demand += contrib(mw, in).at(hourOf(o.Now))
		if in.Rows <= 0 || in.RowBytes < minRowBytes || in.RowBytes > maxRowBytes || in.Amp < 0 || in.Amp > o.DiurnalAmplitude {
			t.Errorf("instance %+v", in)
		}
	}
	if got := demand / cores; math.Abs(got-o.TargetUtil) > 1e-9 {
		t.Errorf("mean utilisation at Now %.6f, want %.2f", got, o.TargetUtil)
	}
}

// TestBatchReportsWhatTheWaveRuns: a wave's batch carries the agent's series for the
// instances it runs, and, once one moved away, nothing of it (a wave deletes a
// departed instance's series).
func TestBatchReportsWhatTheWaveRuns(t *testing.T) {
	o := smallOptions()
	o.CPUNoise, o.RateJitter = 0, 0
	f, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	s := newState(f, o)
	at := o.Now
	s.move(0, 1, at)
	b := s.batch(0, at, time.Minute) // instance 0 left wave 0
	byName := map[string]float64{}
	perInstance := map[string]map[string]float64{}
	for _, p := range b.Points {
		if inst := p.Labels["instance"]; inst != "" {
			if perInstance[inst] == nil {
				perInstance[inst] = map[string]float64{}
			}
			perInstance[inst][p.Name] = p.Value
			continue
		}
		byName[p.Name] = p.Value
	}
	w := f.Waves[0]
	want := w.Idle
	n := 0
	for i, wi := range s.assign {
		if wi != 0 {
			continue
		}
		n++
		in := f.Instances[i]
		want += contrib(w, in).at(hourOf(at))
		got := perInstance[in.ID]
		rows := in.Rows * in.Diurnal(hourOf(at))
		if math.Abs(got["wave.tps"]-rows) > 1e-6*rows || math.Abs(got["wave.bytes_per_s"]-rows*in.RowBytes) > 1e-6*rows*in.RowBytes || got["wave.instance_running"] != 1 {
			t.Errorf("instance %s: %v, want rows %.1f", in.ID, got, rows)
		}
	}
	if gone, ok := perInstance[f.Instances[0].ID]; ok {
		t.Errorf("the instance that moved away: %v, want nothing of it", gone)
	}
	if byName["wave.instances"] != float64(n) || byName["cpu.cores"] != float64(w.Cores) {
		t.Errorf("wave.instances %v cpu.cores %v, want %d and %d", byName["wave.instances"], byName["cpu.cores"], n, w.Cores)
	}
	if got := byName["wave.cpu_cores"]; math.Abs(got-min(want, float64(w.Cores))) > 1e-9 {
		t.Errorf("wave.cpu_cores %v, want the true demand %v", got, want)
	}
	if got := byName["cpu.util"]; math.Abs(got-min(100, 100*want/float64(w.Cores))) > 1e-9 {
		t.Errorf("cpu.util %v, want %v", got, 100*want/float64(w.Cores))
	}
	for _, name := range []string{"mem.used_pct", "load.1", "wave.tps", "wave.bytes_per_s"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no unlabelled %s", name)
		}
	}
}

// TestLoadClosedForm: a wave's load in closed form is the sum of its instances' costs at
// every hour, and its peak the maximum over the day.
func TestLoadClosedForm(t *testing.T) {
	f, err := Generate(smallOptions())
	if err != nil {
		t.Fatal(err)
	}
	w := f.Waves[0]
	l := load{c: w.Idle}
	for _, in := range f.Instances[:10] {
		l = l.plus(contrib(w, in))
	}
	sampled := math.Inf(-1)
	for k := range 24 * 600 {
		h := float64(k) / 600
		sum := w.Idle
		for _, in := range f.Instances[:10] {
			sum += w.Base(in) * in.Diurnal(h)
		}
		if math.Abs(l.at(h)-sum) > 1e-9 {
			t.Fatalf("at %.3f h: closed form %v, sum %v", h, l.at(h), sum)
		}
		sampled = max(sampled, sum)
	}
	if p := l.peak(); p < sampled-1e-12 || p > sampled+1e-6 {
		t.Fatalf("peak %v, sampled maximum %v", p, sampled)
	}
}

// TestParseCores reads a mix and names what is wrong with a bad one.
func TestParseCores(t *testing.T) {
	got, err := ParseCores("2:8, 4:8,8:8")
	if err != nil || !reflect.DeepEqual(got, []CoreClass{{2, 8}, {4, 8}, {8, 8}}) {
		t.Fatalf("ParseCores: %v, %v", got, err)
	}
	if s := FormatCores(got); s != "2:8,4:8,8:8" {
		t.Fatalf("FormatCores: %q", s)
	}
	for _, bad := range []string{"", "2", "2:x", "0:4", "2:0", "2:8,", "-1:3"} {
		if _, err := ParseCores(bad); err == nil || !strings.Contains(err.Error(), "cores:waves") {
			t.Errorf("ParseCores(%q): %v, want an error naming cores:waves", bad, err)
		}
	}
}

// TestScaleWaves keeps a mix's proportions over another number of waves.
func TestScaleWaves(t *testing.T) {
	for _, tc := range []struct {
		in   []CoreClass
		n    int
		want []CoreClass
	}{
		{[]CoreClass{{2, 8}, {4, 8}, {8, 8}}, 200, []CoreClass{{2, 67}, {4, 67}, {8, 66}}},
		{[]CoreClass{{2, 8}, {4, 8}, {8, 8}}, 6, []CoreClass{{2, 2}, {4, 2}, {8, 2}}},
		{[]CoreClass{{2, 1000}, {4, 1}, {8, 1}}, 3, []CoreClass{{2, 1}, {4, 1}, {8, 1}}},
		{[]CoreClass{{4, 24}}, 5, []CoreClass{{4, 5}}},
	} {
		got, err := ScaleWaves(tc.in, tc.n)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ScaleWaves(%v, %d) = %v, %v; want %v", tc.in, tc.n, got, err, tc.want)
		}
	}
	if _, err := ScaleWaves([]CoreClass{{2, 1}, {4, 1}}, 1); err == nil {
		t.Error("ScaleWaves to fewer waves than classes: no error")
	}
}

// TestValidateNamesTheField: a bad option is refused with its name.
func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Instances = 0 }, "instances 0"},
		{func(o *Options) { o.Cores = nil }, "no capacity class"},
		{func(o *Options) { o.TargetUtil = 0 }, "target utilisation"},
		{func(o *Options) { o.Rounds = 0 }, "rounds 0"},
		{func(o *Options) { o.Step = 10 * time.Minute }, "history step"},
		{func(o *Options) { o.Warmup = 48 * time.Hour }, "warmup"},
		{func(o *Options) { o.RoundEvery = time.Second }, "round every"},
		{func(o *Options) { o.DiurnalAmplitude = 2 }, "diurnal amplitude"},
		{func(o *Options) { o.RowPrice, o.BytePrice = 0, 0 }, "cost nothing"},
		{func(o *Options) { o.HostShare = 0 }, "host share 0"},
		{func(o *Options) { o.HostShare, o.HostOther = 2, 0.8 }, "host other 0.8"},
		{func(o *Options) { o.HostOther = 0.1 }, "give a host share of 2 or more"},
	} {
		o := DefaultOptions()
		tc.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate: %v", tc.want, err)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range Presets {
		o, err := Preset(p)
		if err != nil || o.Validate() != nil {
			t.Errorf("preset %s: %v", p, err)
		}
	}
	if _, err := Preset("tiny"); err == nil || !strings.Contains(err.Error(), "hetero") {
		t.Errorf("Preset(tiny): %v", err)
	}
}
