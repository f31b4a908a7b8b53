package fleetsim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/judge"
)

// CoreClass is one capacity class of the fleet: Waves waves of Cores cores each.
type CoreClass struct {
	Cores int `json:"cores"`
	Waves int `json:"waves"`
}

// Options configure a run; start from DefaultOptions or Preset. Validate checks every
// field (a zero count or duration is an error, not a default).
type Options struct {
	// Seed makes the fleet and every noise of the run: the same seed, the same fleet and
	// the same batches.
	Seed uint64
	// Cores is the fleet's capacity mix.
	Cores []CoreClass
	// Instances is the number of capture instances.
	Instances int
	// RowsSigma is the σ of the lognormal rows/s (its median is set by TargetUtil);
	// SizeMedian and SizeSigma those of the lognormal row size in bytes.
	RowsSigma, SizeMedian, SizeSigma float64
	// TargetUtil is the fleet's mean utilisation at Now: rates are scaled so that the
	// total demand is this share of the total cores.
	TargetUtil float64
	// RowPrice (cores per row/s), BytePrice (cores per byte/s) and IdleCores (the wave
	// process with no instance) are the fleet's mean prices; each wave's are these times
	// its speed factor, lognormal of σ SpeedSigma (the byte price varies by another
	// factor of σ SpeedSigma/2).
	RowPrice, BytePrice, IdleCores, SpeedSigma float64
	// ReadPrice is the fleet's mean cores per binlog byte/s read (each wave's is this
	// times its speed factor, like RowPrice): a wave reads its instances' whole sources,
	// every table's events, whatever their filters publish. 0: reading costs nothing and
	// the agents report no wave.binlog_bytes_per_s (the fleets before it was modelled).
	ReadPrice float64
	// FilteredShare is the share of instances whose filters keep only part of their
	// source: each reads ReadRatio times the bytes it publishes, lognormal of median
	// ReadRatioMedian and σ ReadRatioSigma, never below 1. The others read exactly what
	// they publish.
	FilteredShare, ReadRatioMedian, ReadRatioSigma float64
	// DiurnalAmplitude is the largest diurnal swing of an instance (each draws 30–100 %
	// of it); DiurnalRegions the number of regions whose instances peak near the same hour.
	DiurnalAmplitude float64
	DiurnalRegions   int
	// RateJitter is the σ (relative) of each tick's rates around the diurnal truth;
	// CPUNoise that of the measured wave.cpu_cores around the demand (cpu.util is the
	// same reading: the simulated hosts run nothing else).
	RateJitter, CPUNoise float64
	// HostShare is how many waves share a host (1: each has its own), waves of one
	// capacity class together: each wave keeps its own cores as its share of the host's.
	// HostOther is the other work on each shared host, as a share of its cores on
	// average (each host draws from none to twice that), on top of the fleet's
	// TargetUtil: what a host loaded by other programs, or a trial of several waves on
	// one machine, puts beside the waves.
	HostShare int
	HostOther float64

	// Now is the simulated time at which the history ends and the balancer starts (zero:
	// the wall clock's minute; an external judge always runs at the wall clock).
	Now time.Time
	// History is how long the agents have reported before Now, at HistoryStep; the last
	// Warmup of it at Step, the agents' interval near now and during the rounds.
	History, HistoryStep, Warmup, Step time.Duration

	// Rounds bounds the balancer's rounds; RoundEvery is the simulated time between two
	// (the balancer's auto_after: it applies a plan once the load has stayed outside the
	// goals that long).
	Rounds     int
	RoundEvery time.Duration
	// Settle keeps the balancer asking, every RoundEvery, for this much simulated time
	// after the first empty plan that says the fleet is balanced, as a real balancer
	// goes on asking; moves then are counted apart (Report.Unsettled). 0 ends the run at
	// that plan. Those rounds are not bounded by Rounds.
	Settle time.Duration

	// JudgeURL is an external judge's base URL; empty runs one in process. Token is sent
	// as a bearer token on the POSTs; CAFile verifies an https judge.
	JudgeURL string
	Token    config.Secret
	CAFile   string
	// Judge adjusts the in-process judge's options after the simulator set its own (the
	// store, the clock, the address): rebalance goals, analysis settings. Nil: defaults.
	Judge func(*judge.Options)
	// Dir holds the in-process judge's SQLite file; when empty, a temporary folder
	// removed at the end, in /dev/shm where there is one (memory: see memTempDir).
	Dir string
	// HistoricalEvery is the in-process judge's historical refresh period in simulated
	// time (the judge's default, 10 minutes). The simulator makes the refreshes itself:
	// one after the history and then, during the rounds, one after the first tick at or
	// past each period, each awaited before the run goes on. A refresh on a timer in real
	// time read the store at whatever simulated instants the machine's speed gave, or
	// timed out on a busy one, and the same seeded fleet planned differently beside the
	// test suite than alone (filtered seed 4: 80 moves against 60). An external judge
	// refreshes on its own clock (analysis.historical_every).
	HistoricalEvery time.Duration
	// HistoryWait bounds the wait, after the history, for an external judge's historical
	// refresh that covers it (GET /healthz historical_as_of); 0 does not wait.
	HistoryWait time.Duration
	// Senders post the batches of a tick concurrently.
	Senders int
	// Prefix starts every node and instance name (a scratch run on a shared judge).
	Prefix string
	// PredictedKeys name, in the judge's rebalance answer, maps of node → predicted
	// peak utilisation of the day (fraction of the wave's cores) before and after the
	// plan, when the judge exposes them; the first present is compared with each wave's
	// true peak of the day. Optional: a judge that exposes none is reported as such.
	PredictedBefore, PredictedAfter []string
	// Truth puts the fleet's true costs in the report (Report.Truth), for checking plans
	// offline.
	Truth bool

	// Progress receives a line per phase and round (nil: none). Logger receives the
	// in-process judge's warnings (nil: discarded).
	Progress io.Writer
	Logger   *slog.Logger
}

// DefaultOptions is the `hetero` preset: the fleet of 24 waves (8 × 2, 8 × 4,
// 8 × 8 cores) and 400 instances at 40 % mean utilisation, a day of history every 5
// minutes and its last 6 hours every minute, up to 20 rounds 5 minutes apart.
//
// The last 6 hours are the judge's price-fit window (loadmodel's Window), where an agent
// sends a batch every 10 s: at 5-minute steps there the judge priced each wave from a
// fifth of the samples a minute's give it, and seeds 1 and 23 of the hetero fleet ended
// over the target (1.104× greedy by the day); the hours before only feed the hour-of-day
// profiles, which 5-minute steps draw as well.
func DefaultOptions() Options {
	return Options{
		Seed: 1, Cores: []CoreClass{{2, 8}, {4, 8}, {8, 8}}, Instances: 400,
		RowsSigma: 1.0, SizeMedian: 400, SizeSigma: 0.7, TargetUtil: 0.4,
		RowPrice: 20e-6, BytePrice: 5e-9, IdleCores: 0.1, SpeedSigma: 0.25,
		ReadRatioMedian: 5, ReadRatioSigma: 0.8, // what a filtered instance reads, once some are (-filtered)
		DiurnalAmplitude: 0.5, DiurnalRegions: 3, RateJitter: 0.05, CPUNoise: 0.03, HostShare: 1,
		Now:     time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC),
		History: 24 * time.Hour, HistoryStep: 5 * time.Minute, Warmup: 6 * time.Hour, Step: time.Minute,
		Rounds: 20, RoundEvery: 5 * time.Minute,
		HistoricalEvery: 10 * time.Minute, HistoryWait: 2 * time.Minute, Senders: 4,
		PredictedBefore: []string{"before", "util_before", "utilisation_before"},
		PredictedAfter:  []string{"after", "util_after", "utilisation_after"},
	}
}

// Presets are the named fleets of `binlake bench fleet -preset`.
var Presets = []string{"hetero", "large", "homogeneous", "filtered", "shared"}

// Preset returns a named fleet's options: hetero (DefaultOptions), large (200 waves of
// 2, 4 and 8 cores, 5,000 instances, up to 60 rounds), homogeneous (24 identical hosts of 4 cores: the
// same prices everywhere, 400 instances; their row sizes still differ, so rows/s alone
// does not measure their cost) or filtered (hetero's fleet where reading the binlog
// costs CPU and half the instances read several times what they publish: rows and bytes
// published alone do not measure their cost) or shared (hetero's fleet two waves to a
// host, each host loaded by other work of 10 % of its cores on average: the judge holds
// hosts, not shares, to max_utilisation).
func Preset(name string) (Options, error) {
	o := DefaultOptions()
	switch name {
	case "hetero":
	case "large":
		o.Cores = []CoreClass{{2, 67}, {4, 67}, {8, 66}}
		o.Instances = 5000
		// The judge's historical analysis of a day of 5,000 instances took over the
		// default 2 minutes on a loaded 2-core machine: an external judge's plans then
		// went without hour-of-day profiles (the report warns).
		o.HistoryWait = 10 * time.Minute
		// Its plans take 20 moves each (the judge's max_moves) of the ~475 that bring it
		// within 1.10× greedy, in about 25 rounds: 20 ended every run short of it.
		o.Rounds = 60
	case "homogeneous":
		o.Cores = []CoreClass{{4, 24}}
		o.SpeedSigma = 0
	case "filtered":
		o.FilteredShare, o.ReadRatioMedian, o.ReadRatioSigma = 0.5, 5, 0.8
		// At the median row of 400 bytes a filtered instance of the median ratio reads
		// 2,000 bytes per row published: at 1e-8 cores per byte/s that is 20 µcores per
		// row/s, about what publishing the row costs (20 for the row, 2 for its bytes),
		// so reading is half of such an instance's cost and a judge that prices only
		// what is published underestimates it twofold. An unfiltered instance's reading
		// adds 4 µcores, about a sixth of its cost, which its bytes published measure.
		o.ReadPrice = 1e-8
	case "shared":
		o.HostShare, o.HostOther = 2, 0.1
	default:
		return o, fmt.Errorf("preset %q: want one of %s", name, strings.Join(Presets, ", "))
	}
	return o, nil
}

// ParseCores reads a capacity mix "cores:waves,…" such as "2:8,4:8,8:8".
func ParseCores(s string) ([]CoreClass, error) {
	var out []CoreClass
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		c, n, ok := strings.Cut(part, ":")
		cores, err1 := strconv.Atoi(c)
		waves, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || cores < 1 || waves < 1 {
			return nil, fmt.Errorf("cores %q: %q is not cores:waves with both at least 1 (e.g. 2:8,4:8,8:8)", s, part)
		}
		out = append(out, CoreClass{Cores: cores, Waves: waves})
	}
	return out, nil
}

// FormatCores writes a mix the way ParseCores reads it.
func FormatCores(cs []CoreClass) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%d:%d", c.Cores, c.Waves)
	}
	return strings.Join(parts, ",")
}

// ScaleWaves keeps the mix's proportions over n waves in all (largest remainders).
func ScaleWaves(cs []CoreClass, n int) ([]CoreClass, error) {
	total := 0
	for _, c := range cs {
		total += c.Waves
	}
	if n < len(cs) || total == 0 {
		return nil, fmt.Errorf("waves %d: want at least one per capacity class (%d)", n, len(cs))
	}
	out := slices.Clone(cs)
	type rem struct {
		i int
		r float64
	}
	var rems []rem
	left := n
	for i, c := range cs {
		exact := float64(c.Waves) * float64(n) / float64(total)
		out[i].Waves = max(1, int(exact))
		left -= out[i].Waves
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		switch {
		case a.r > b.r:
			return -1
		case a.r < b.r:
			return 1
		}
		return 0
	})
	for k := 0; left > 0; k++ {
		out[rems[k%len(rems)].i].Waves++
		left--
	}
	for k := 0; left < 0; k++ { // the at-least-one rule took more than n
		if i := k % len(out); out[i].Waves > 1 {
			out[i].Waves--
			left++
		}
	}
	return out, nil
}

// validateFleet checks what Generate reads.
func (o Options) validateFleet() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.Cores) == 0 {
		bad("cores: no capacity class")
	}
	for _, c := range o.Cores {
		if c.Cores < 1 || c.Waves < 1 {
			bad("cores: class %d:%d: want cores and waves of at least 1", c.Cores, c.Waves)
		}
	}
	if o.Instances < 1 {
		bad("instances %d: want at least 1", o.Instances)
	}
	for _, f := range []struct {
		name string
		v    float64
		lo   float64
		hi   float64
	}{
		{"rows sigma", o.RowsSigma, 0, 5}, {"size median", o.SizeMedian, minRowBytes, maxRowBytes},
		{"size sigma", o.SizeSigma, 0, 5}, {"target utilisation", o.TargetUtil, 1e-6, 100},
		{"row price", o.RowPrice, 0, 1}, {"byte price", o.BytePrice, 0, 1}, {"idle cores", o.IdleCores, 0, 1e3},
		{"speed sigma", o.SpeedSigma, 0, 2}, {"diurnal amplitude", o.DiurnalAmplitude, 0, 1},
		{"rate jitter", o.RateJitter, 0, 1}, {"CPU noise", o.CPUNoise, 0, 1},
		{"read price", o.ReadPrice, 0, 1}, {"filtered share", o.FilteredShare, 0, 1},
		{"read ratio median", o.ReadRatioMedian, 1, maxReadRatio}, {"read ratio sigma", o.ReadRatioSigma, 0, 5},
	} {
		if !(f.v >= f.lo && f.v <= f.hi) {
			bad("%s %v: want %v–%v", f.name, f.v, f.lo, f.hi)
		}
	}
	if o.RowPrice == 0 && o.BytePrice == 0 && o.ReadPrice == 0 {
		bad("row, byte and read prices are all 0: instances would cost nothing")
	}
	if o.FilteredShare > 0 && o.ReadPrice == 0 {
		// Without a read price nothing a filtered instance reads costs or is reported:
		// the share would change nothing, which is not what it was given for.
		bad("filtered share %v with read price 0: what filtered instances read would cost nothing; give a read price too", o.FilteredShare)
	}
	if o.DiurnalRegions < 1 {
		bad("diurnal regions %d: want at least 1", o.DiurnalRegions)
	}
	if o.HostShare < 1 {
		bad("host share %d: want at least 1 wave per host", o.HostShare)
	}
	if !(o.HostOther >= 0 && o.HostOther <= 0.5) {
		bad("host other %v: want 0–0.5 of a host's cores", o.HostOther)
	} else if o.HostOther > 0 && o.HostShare < 2 {
		bad("host other %v with one wave per host: the other work is a shared host's; give a host share of 2 or more", o.HostOther)
	}
	return errors.Join(errs...)
}

// Validate checks the options of a run.
func (o Options) Validate() error {
	errs := []error{o.validateFleet()}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.History < 0 || o.Warmup < 0 || o.Warmup > o.History {
		bad("history %s and warmup %s: want 0 ≤ warmup ≤ history", o.History, o.Warmup)
	}
	if o.HistoryStep <= 0 || o.Step <= 0 || o.Step > o.HistoryStep {
		bad("history step %s and step %s: want 0 < step ≤ history step", o.HistoryStep, o.Step)
	}
	if o.Step < time.Second {
		bad("step %s: at least 1s (an agent's interval)", o.Step)
	}
	if o.Rounds < 1 {
		bad("rounds %d: want at least 1", o.Rounds)
	}
	if o.Settle < 0 {
		bad("settle %s: must not be negative", o.Settle)
	}
	if o.RoundEvery < o.Step {
		bad("round every %s: want at least the step %s (the agents report between two rounds)", o.RoundEvery, o.Step)
	}
	if o.JudgeURL == "" && o.HistoricalEvery <= 0 {
		bad("historical every %s: want more than 0", o.HistoricalEvery)
	}
	if o.HistoryWait < 0 {
		bad("history wait %s: must not be negative", o.HistoryWait)
	}
	if o.Senders < 1 {
		bad("senders %d: want at least 1", o.Senders)
	}
	return errors.Join(errs...)
}
