package loadmodel

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The pool's split of a row's price against a byte's comes out where the waves' speeds
// and the prices agree, not three alternations short of it: on hosts that differ in
// speed whose work is mostly rows, each wave's slope at prices that overprice bytes
// reads as a speed, and a few rounds of that left bytes 1.5 times their price on the
// fleet simulator's seed 4 (every wave leaning on the pool priced its bytes so).
func TestPooledSplitConverges(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			clk := t0
			m := New(Options{Now: func() time.Time { return clk }})
			var ws []*wave
			for i, speed := range []float64{0.5, 0.7, 0.9, 1, 1.1, 1.4, 1.8, 2.5} {
				w := newWave(fmt.Sprintf("w%d", i), truth{row: speed * 2e-5, byte: speed * 5e-9, base: speed * 0.1}, 12, seed*100+uint64(i))
				w.cores = 32
				for k := range w.sizes { // each wave its own mix: from 0.3 to 3 times the rows' sizes
					w.sizes[k] *= 0.3 * math.Pow(10, float64((i*3)%8)/7)
				}
				ws = append(ws, w)
			}
			feed(m, &clk, 6*time.Hour, ws...)
			pp, ok := m.Pooled()
			require.True(t, ok)

			ratio := pp.Byte / pp.Row
			within(t, 5e-9/2e-5, ratio, 0.10, "the pool's byte price over its row price")
		})
	}
}
