package integration_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric/waveprom"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestJudgeLearnsARealWavesCostIntegration: the load model on a real `binlake wave`
// process, its agent reporting to the judge every second. Four instances, two of narrow
// rows and two of rows padded to 3 kB, each publishing its own table, are written in
// phases that vary how many rows and how many bytes the wave publishes, idle included,
// and a fifth table of the same server, padded too, that no instance publishes but every
// one reads (each reads the server's whole binlog: the five tables' and the other
// tests' beside it), so that what the wave reads varies apart from what it publishes; the
// judge fits the wave's prices of a row, of a byte published and of a binlog byte read
// to the CPU the wave process used. Then, in a phase of a mix the fit has not seen, the
// CPU those prices predict for what the wave publishes and reads is held to the CPU its
// process truly used, all counted by the wave's own /metrics (rows and bytes published,
// binlog bytes read, process_cpu_seconds_total), not by the agent.
//
// The rates are high enough for the work to stand out of the wave's idle CPU and of the
// noise of a loaded machine: in runs on 2 cores beside other tests, 10,000 narrow rows/s
// cost 0.04–0.05 cores over an idle 0.023–0.026, 3,000 padded rows/s (9.8 MB/s) about
// 0.12; the held-out phase was predicted within 4–6 %, where the mean CPU of the training
// phases missed it by about 30 %. With 1.5 kB rows a CI run fitted R² 0.39 and missed
// it by 16 %. Reading is half of it: 1,500 padded rows/s of the table no instance
// publishes (18 MB/s of binlog read in all) cost 0.029–0.039 cores; without that phase
// the reading moved only with the published rows (two kinds of row), the judge priced it
// within them (pooled_read_collinear), and a run missed the held-out phase by 17 %, with
// it by 8.5 % (binlog_byte_cores 1.3e-9).
func TestJudgeLearnsARealWavesCostIntegration(t *testing.T) {
	ctx := testenv.Context(t)
	e := newBalanceEnv(t, ctx, "cost", 5)
	e.insts = e.insts[:4] // t4 is read by every instance, published by none
	conn := wavetest.Connect(t)
	for _, i := range []int{2, 3, 4} {
		wavetest.MustExec(t, conn, fmt.Sprintf("ALTER TABLE %s.t%d ADD COLUMN pad VARCHAR(4000) NOT NULL DEFAULT (REPEAT('x', 3000))", e.db, i))
	}
	url, _ := e.startJudge(judge.DefaultRebalanceOptions(), "")
	w := e.startWave("wave-a")
	e.waitWaves(1, w)
	a := e.startAgent("wave-a", url)
	e.addAll("wave-a")
	e.waitFor("every instance led by wave-a", func() bool { return len(e.nodes("leader")) == len(e.insts) }, w, a)

	// phase writes rates (rows/s per table) for d after a settling second, and returns
	// the wave's rows/s, bytes/s published, binlog bytes/s read and CPU cores over d by
	// its /metrics.
	phase := func(rates []int, d time.Duration) (rows, bytes, binlog, cpu float64) {
		t.Helper()
		e.write(rates)
		defer e.stopWriting()
		time.Sleep(2 * time.Second)
		read := func() (float64, float64, float64, float64, int64, time.Time) {
			return e.balancerMetric(waveprom.RowsPublished), e.balancerMetric(waveprom.BytesPublished), e.balancerMetric(waveprom.BinlogBytesRead),
				e.balancerMetric("process_cpu_seconds_total"), e.written.Load(), time.Now()
		}
		r0, b0, l0, c0, w0, t0 := read()
		time.Sleep(d)
		r1, b1, l1, c1, w1, t1 := read()
		for try := 1; (r1 < r0 || b1 < b0 || l1 < l0) && try < 3; try++ {
			// The counters started again: the wave lost its instances' leadership and
			// took it back (a ZooKeeper session expired on a loaded machine) and their
			// counters with it. Measure the phase again.
			t.Logf("written %v a second: the wave's counters went back (%.0f rows, then %.0f); measuring again", rates, r0, r1)
			r0, b0, l0, c0, w0, t0 = read()
			time.Sleep(d)
			r1, b1, l1, c1, w1, t1 = read()
		}
		dt := t1.Sub(t0).Seconds()
		rows, bytes, binlog, cpu = (r1-r0)/dt, (b1-b0)/dt, (l1-l0)/dt, (c1-c0)/dt
		wrote := float64(w1-w0) / dt
		want, published := 0, 0
		for i, r := range rates {
			want += r
			if i < len(e.insts) {
				published += r
			}
		}
		t.Logf("written %v a second (%.0f rows a second inserted): the wave published %.0f rows and %.0f bytes and read %.0f binlog bytes a second on %.4f cores",
			rates, wrote, rows, bytes, binlog, cpu)
		// The phases must be what they say, or the fit below learns from something else:
		// the wave publishes what was inserted, and the inserts come near the rates asked
		// (on a loaded machine an insert can outlast its tick: a CI run inserted 6,256 of
		// 10,000 rows a second, and the wave published every one).
		pub := wrote // the rows inserted in the tables an instance publishes
		if want > 0 {
			pub *= float64(published) / float64(want)
		}
		if math.Abs(rows-pub) > 0.2*pub+20 {
			t.Fatalf("written %v a second: %.0f rows a second inserted in the published tables, the wave published %.0f a second: want them within 20 %%", rates, pub, rows)
		}
		if wrote < 0.5*float64(want) {
			t.Fatalf("written %v a second: only %.0f rows a second inserted, want at least half of %d", rates, wrote, want)
		}
		return rows, bytes, binlog, cpu
	}
	var used []float64
	for _, rates := range [][]int{{5000, 5000, 0, 0, 0}, {0, 0, 1500, 1500, 0}, {0, 0, 0, 0, 0}, {2500, 2500, 750, 750, 0}, {0, 0, 500, 500, 0}, {0, 0, 0, 0, 1500}} {
		_, _, _, cpu := phase(rates, 10*time.Second)
		used = append(used, cpu)
	}

	var node struct{ Capacity *api.NodeLoad }
	if err := json.Unmarshal([]byte(wavetest.HTTPGet(t, url+"/v1/nodes/wave-a")), &node); err != nil || node.Capacity == nil {
		t.Fatalf("the judge's wave-a: %v (capacity %v)", err, node.Capacity)
	}
	p := node.Capacity.Prices
	t.Logf("the judge's prices of wave-a: %+v", p)
	// Which of the two prices carries the work is the fit's to say: a narrow row is
	// published as some 250 bytes of JSON, so rows and bytes move nearly together, and
	// runs have priced the narrow rows' work as rows or, with the row price at 0, as bytes.
	// R² was 0.83–0.91 beside other tests; lower on a loaded machine, where a second's
	// CPU of a process sharing 2 cores with the suite is noisy.
	if p.Samples < 30 || p.R2 < 0.3 {
		t.Errorf("prices %+v: want at least 30 samples (the least the judge fits a wave's own prices to), explained with R² ≥ 0.3", p)
	}
	// The phase of t4 alone read 4 × its binlog and published nothing: reading is priced.
	if !(p.BinlogByteCores > 0) || p.PooledReadCollinear {
		t.Errorf("prices %+v: want a price of a binlog byte read above 0, told apart from publishing", p)
	}

	// Measured twice as long as a training phase: a second of CPU of a process sharing 2
	// cores with the suite's other packages is noisy, and the held-out figure is the one
	// asserted. Alone, runs measured it within 1–9 % of the prediction (BENCHMARKS.md);
	// under the whole suite the same work costs a process more CPU on a busier machine,
	// and the machine's load changes between phases: CI runs measured the held-out phase
	// 26 % and 27.5 % above the prediction when the load rose after the training, and 31 %
	// below it when it fell. So a training mix (the first, its narrow rows) is measured
	// again beside the held-out one, and the machine's speed then (what that mix used then
	// over what the prices predict for it) scales both predictions: the prices must then
	// predict the unseen mix within 35 %, and better than the training phases' mean CPU
	// does. The two are measured in turns, four slices of 5 s each, so that the load's
	// drift weighs on both alike: measured one after the other for 20 s each, a CI run
	// read the reference at 0.76× the training's while the held-out phase before it ran
	// on a busier machine, and missed by 38.7 %.
	var rows, bytes, binlog, cpu, refRows, refBytes, refBinlog, refCPU float64
	const turns = 4
	for range turns {
		r, b, l, c := phase([]int{4000, 0, 500, 1500, 700}, 5*time.Second)
		rows, bytes, binlog, cpu = rows+r/turns, bytes+b/turns, binlog+l/turns, cpu+c/turns
		r, b, l, c = phase([]int{5000, 5000, 0, 0, 0}, 5*time.Second)
		refRows, refBytes, refBinlog, refCPU = refRows+r/turns, refBytes+b/turns, refBinlog+l/turns, refCPU+c/turns
	}
	predict := func(rows, bytes, binlog float64) float64 {
		return p.BaseCores + p.RowCores*rows + p.ByteCores*bytes + p.BinlogByteCores*binlog
	}
	speed := refCPU / predict(refRows, refBytes, refBinlog)
	pred := speed * predict(rows, bytes, binlog)
	mean := 0.0
	for _, u := range used {
		mean += speed * u / float64(len(used))
	}
	t.Logf("held out: predicted %.4f cores (%.4f at the machine's speed then, %.2f× the training's), used %.4f (%+.1f %%); the training phases' mean %.4f (%+.1f %%)",
		predict(rows, bytes, binlog), pred, speed, cpu, 100*(pred-cpu)/cpu, mean, 100*(mean-cpu)/cpu)
	if math.Abs(pred-cpu) > 0.35*cpu || math.Abs(pred-cpu) >= math.Abs(mean-cpu) {
		t.Errorf("held out: the prices predict %.4f cores for %.0f rows/s, %.0f bytes/s and %.0f binlog bytes/s at the machine's speed then, the wave used %.4f: want within 35 %%, and nearer than the training phases' mean CPU (%.4f)",
			pred, rows, bytes, binlog, cpu, mean)
	}
}
