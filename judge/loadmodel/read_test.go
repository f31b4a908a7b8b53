package loadmodel

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
)

// readingWave is a wave whose instances read their sources' binlogs: those of filtered
// (odd) ones read 2–10 times what they publish, the others what they publish.
func readingWave(node string, tr truth, instances int, seed uint64) *wave {
	w := newWave(node, tr, instances, seed)
	for i := range instances {
		ratio := 1.0
		if i%2 == 1 {
			ratio = 2 + w.rng.Float64()*8
		}
		w.reads = append(w.reads, ratio)
	}
	return w
}

// The price of a binlog byte read is recovered within 10 % beside the prices of a row
// and of a byte published, and instances that read 1, 5 and 20 times what they publish
// are each priced within 10 % of their true cost; fitted to the same wave with the
// reading not reported, prices of rows and bytes alone spread the reading over what the
// wave publishes at its own mix, and price the instance that reads 20 times what it
// publishes as the one that reads what it publishes (its true cost 2.2 times that). With 3 % CPU noise the byte price, the smallest share
// of the cost and the one the reading moves with, is the least pinned down (seen over
// 12 seeds: within 25 %; the row and read prices within 10 %, the costs within 6 %).
func TestReadPriceRecovered(t *testing.T) {
	tr := truth{row: 2e-5, byte: 4e-9, read: 3e-9, base: 0.15}
	cost := func(p Prices, ratio float64) float64 { return p.Cost(1000, 500e3, ratio*500e3) }
	truly := func(ratio float64) float64 { return tr.row*1000 + tr.byte*500e3 + tr.read*ratio*500e3 }
	for i, c := range []struct {
		noise, byteTol float64
	}{{0.01, 0.10}, {0.03, 0.30}} {
		t.Run(fmt.Sprintf("noise %.0f%%", 100*c.noise), func(t *testing.T) {
			clk := t0
			m := New(Options{Now: func() time.Time { return clk }})
			w := readingWave("w", tr, 12, uint64(i+1))
			w.noise = c.noise
			feed(m, &clk, 6*time.Hour, w)
			p := m.Prices("w")
			require.Equal(t, SourceFitted, p.Source)
			within(t, tr.row, p.Row, 0.10, "row price")
			within(t, tr.byte, p.Byte, c.byteTol, "byte price")
			within(t, tr.read, p.Read, 0.10, "read price")
			require.InDelta(t, tr.base, p.Base, 0.02, "base, in cores")
			for _, ratio := range []float64{1, 5, 20} {
				within(t, truly(ratio), cost(p, ratio), 0.10, fmt.Sprintf("an instance reading %g times what it publishes", ratio))
			}

			// The same wave, its agent not reporting the binlog read.
			clk = t0
			blind := New(Options{Now: func() time.Time { return clk }})
			w = readingWave("w", tr, 12, uint64(i+1))
			w.noise = c.noise
			for ts := clk; ts.Before(t0.Add(6 * time.Hour)); ts = ts.Add(10 * time.Second) {
				b := w.batch(ts)
				b.Points = slices.DeleteFunc(b.Points, func(pt metric.Point) bool { return pt.Name == metric.WaveBinlogBytesPerS })
				blind.Observe(b)
			}
			clk = t0.Add(6 * time.Hour)
			q := blind.Prices("w")
			require.Zero(t, q.Read, "no binlog read reported: no price of reading")
			require.Equal(t, cost(q, 1), cost(q, 20), "without the reading, instances that publish alike are priced alike")
			within(t, truly(20)/truly(1), cost(p, 20)/cost(p, 1), 0.10, "what reading 20 times more costs, with it")
		})
	}
}

// A thin wave is priced at the fleet's pooled prices, the reading's among them; a fleet
// whose instances all publish what they read cannot tell reading from publishing: the
// pool prices reading within the rows and bytes (its price 0) and says so, and still
// prices the fleet's mix right.
func TestPooledReadPrice(t *testing.T) {
	tr := truth{row: 2e-5, byte: 4e-9, read: 3e-9, base: 0.15}
	t.Run("filtered instances tell it", func(t *testing.T) {
		clk := t0
		m := New(Options{Now: func() time.Time { return clk }})
		var ws []*wave
		for i := range 5 {
			ws = append(ws, readingWave(fmt.Sprintf("w%d", i), tr, 10, uint64(i+11)))
		}
		feed(m, &clk, 6*time.Hour, ws...)
		thin := readingWave("thin", tr, 10, 99)
		feed(m, &clk, 50*time.Second, thin)
		pp, ok := m.Pooled()
		require.True(t, ok)
		within(t, tr.read, pp.Read, 0.10, "pooled read price")
		p := m.Prices("thin")
		require.Equal(t, SourcePooled, p.Source)
		require.True(t, p.Thin)
		require.False(t, p.PooledReadCollinear)
		within(t, tr.read, p.Read, 0.15, "thin's read price, the pool's at its speed")
	})
	t.Run("unfiltered fleet cannot", func(t *testing.T) {
		clk := t0
		m := New(Options{Now: func() time.Time { return clk }})
		var ws []*wave
		for i := range 5 {
			w := newWave(fmt.Sprintf("w%d", i), tr, 10, uint64(i+11))
			for range w.rates {
				w.reads = append(w.reads, 1) // each publishes what it reads
			}
			ws = append(ws, w)
		}
		feed(m, &clk, 6*time.Hour, ws...)
		pp, ok := m.Pooled()
		require.True(t, ok)
		require.Zero(t, pp.Read, "reading priced within publishing")
		p := m.Prices("new")
		require.True(t, p.PooledReadCollinear, "and the prices say so")
		// The fleet's mix (an instance publishing what it reads) at the pool's prices.
		rows, bytes := 1000.0, 1000*2100.0
		within(t, tr.row*rows+(tr.byte+tr.read)*bytes, pp.Cost(rows, bytes, bytes), 0.10, "the fleet's mix")
	})
}
