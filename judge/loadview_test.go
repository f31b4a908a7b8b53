package judge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/loadmodel"
)

// A wave's error against its lines is its prices' standard error of what its running
// instances cost (two of it: the 95 % interval), not the scatter of one reading (the
// RMSE), which stands in only where the prices carry no such error.
func TestPlanWaveErrIsThePredictionsError(t *testing.T) {
	running := []instWork{{rows: []float64{1000}, bytes: []float64{2e6}}, {rows: []float64{3000}, bytes: []float64{1e6}}}
	p := loadmodel.Prices{Row: 2e-5, Byte: 5e-9, Base: 0.1, RMSE: 0.04, CostErr: 0.02}
	work := 2e-5*4000 + 5e-9*3e6 // 0.095 cores
	w := planWave(&waveView{node: "w", cores: 4, prices: p}, true, running)
	require.InDelta(t, 2*0.02*work, w.Err, 1e-12)
	p.CostErr = 0
	w = planWave(&waveView{node: "w", cores: 4, prices: p}, true, running)
	require.InDelta(t, 0.04, w.Err, 1e-12)
}

// A host resized from 4 to 8 cores: its utilisation is its last cpu.util for a while
// after, not the smoothed one times the new cores (an outside trial: 0.90, then 0.71,
// then 0.55 over 20 s where the host stood at 0.47, and plans moved instances off it).
func TestHostResizedReadsItsLastUtilisation(t *testing.T) {
	j, c := newJudge(t, nil)
	batch := func(cores, util float64) {
		b := waveBatch("wave-1", c.Now(), 0.5, map[string]float64{"a": 1000})
		b.Points = append(b.Points, metric.Point{Name: metric.CPUCores, Value: cores})
		for i := range b.Points {
			if b.Points[i].Name == metric.CPUUtil {
				b.Points[i].Value = util
			}
		}
		require.NoError(t, j.Ingest(b, sourceHTTP))
		c.Add(10 * time.Second)
	}
	utilNow := func() float64 {
		n, ok := j.inc.Node("wave-1")
		require.True(t, ok)
		v := j.viewOf(n)
		return v.host[0] / v.cores
	}
	for range 30 {
		batch(4, 93)
	}
	require.InDelta(t, 0.93, utilNow(), 0.005)
	batch(8, 46)
	require.InDelta(t, 0.46, utilNow(), 0.005, "just resized: its last reading")
	for range 25 {
		batch(8, 47)
	}
	require.InDelta(t, 0.47, utilNow(), 0.005, "resized long ago: the smoothed reading")
}

// A wave pegged until a plan relieved it is judged by its host's last reading: its
// smoothed CPU still held, for minutes, the instances that had just left, and the next
// plans read them as base (1.3 cores where the fit said 0.12) and called the wave over
// its lines by its own load (an outside trial).
func TestRelievedPeggedWaveBaseIsItsLastReading(t *testing.T) {
	running := []instWork{{rows: []float64{300}, bytes: []float64{0}}} // 0.3 cores left on it
	p := loadmodel.Prices{Row: 1e-3, BaseNow: 0.1, Pegged: true}
	v := &waveView{node: "w2b", cores: 2, prices: p, host: []float64{1.5}, hostLast: 0.45,
		costs: nodeCosts{hasCPU: true, cpu: 1.4}}
	w := planWave(v, true, running)
	require.InDelta(t, 0.2, w.Base, 1e-9, "the fit's base and the host's other work, not the smoothed CPU of the instances that left")
	v.hostLast = 2 // still pegged: its demand hides, the host gives it at least its cores
	w = planWave(v, true, running)
	require.InDelta(t, 1.7, w.Base, 1e-9)
}

// The listing's levels keep 12 significant digits: the smoothing's rounding showed a wave
// of 7 instances as 7.000000000000002 (an outside trial); small and large values keep
// theirs.
func TestListedLevelsSignificant(t *testing.T) {
	for in, want := range map[float64]float64{7.000000000000002: 7, 1.5e-7: 1.5e-7, 123456.789: 123456.789, 0.1 + 0.2: 0.3, 0: 0} {
		require.Equal(t, want, significant(in), "%v", in)
	}
}

// An instance's binlog read per hour is its own profile's, not what it publishes at its
// ratio now: a filter keeping a quiet table of a busy server publishes next to nothing
// now, and the ratio read the server's busy hour as millions of times its read. An hour
// without a read profile takes the level now; an instance without any read has none.
func TestInstanceReadFollowsItsOwnProfile(t *testing.T) {
	var prof analysis.InstanceProfile
	prof.Rows[9], prof.Bytes[9], prof.Count[9] = 500, 2e5, 60
	prof.Read[9], prof.ReadCount[9] = 4e6, 60
	prof.Rows[10], prof.Bytes[10], prof.Count[10] = 400, 1e5, 60 // an agent that did not report the read
	p := &profiles{hist: &analysis.Snapshot{Instances: map[string]map[string]analysis.InstanceProfile{"wave-a": {"x": prof}}},
		nodes: map[string][]string{"x": {"wave-a"}}}

	w := workOf("x", api.InstanceCost{RowsPerS: 10, BytesPerS: 1, BinlogBytesPerS: 3e6}, p)
	require.Equal(t, 3e6, w.read[0], "now: the read now")
	require.Equal(t, 4e6, w.read[1+9], "its profile's hour, whatever it published then")
	require.Equal(t, 3e6, w.read[1+10], "an hour without a read profile: the level now")
	require.Equal(t, 3e6, w.read[1+20])
	require.Equal(t, 200000.0, w.bytes[1+9])

	w = workOf("x", api.InstanceCost{RowsPerS: 10, BytesPerS: 1}, p)
	require.Equal(t, 0.0, w.read[0], "no read reported now")
	require.Equal(t, 4e6, w.read[1+9], "its profile still tells its hour")
	require.Nil(t, workOf("y", api.InstanceCost{RowsPerS: 10, BytesPerS: 1}, p).read, "no read, no profile: nothing read")
}
