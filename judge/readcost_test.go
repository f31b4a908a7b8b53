package judge

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/judgetest/wavefleet"
)

// TestReadingIsPriced: through the HTTP API with agents' batches, an instance that reads
// far more binlog than it publishes (its filters keep a few tables of a busy source) is
// priced for its reading. The waves' fits find the price of a binlog byte read beside
// those of a row and a byte, the plan's cost of each instance is its rows, bytes and
// binlog at its wave's prices, and a placement weighs a hint's binlog at each wave's
// price, or, without it, the bytes published at the fleet's ratio of binlog read to
// bytes published.
func TestReadingIsPriced(t *testing.T) {
	j, c := newJudge(t, func(o *Options) { o.Algorithm = "random" })
	h := j.Handler()
	const row, byt, read = 2e-5, 1e-9, 2e-9
	waves := []wavefleet.Wave{
		{Node: "wave-a", Cores: 8, UtilPct: 30, Row: row, Byte: byt, Read: read,
			Instances: map[string]float64{"a1": 1000, "a2": 800, "a3": 500}, Reads: map[string]float64{"a1": 1, "a2": 100, "a3": 1}},
		{Node: "wave-b", Cores: 8, UtilPct: 30, Row: row, Byte: byt, Read: read,
			Instances: map[string]float64{"b1": 900, "b2": 700, "b3": 400}, Reads: map[string]float64{"b1": 10, "b2": 1, "b3": 3}},
	}
	utilFleet(t, h, c, waves)

	plan := getPlan(t, j)
	require.Equal(t, api.ModelUtilisation, plan.Model, plan.ModelNote)
	prices := map[string]api.Prices{}
	for _, w := range plan.Waves {
		prices[w.Node] = w.Prices
		require.Equal(t, "fitted", w.Prices.Source, w.Node)
		require.InEpsilon(t, row, w.Prices.RowCores, 0.1, "%s: row price", w.Node)
		require.InEpsilon(t, read, w.Prices.BinlogByteCores, 0.1, "%s: the price of a binlog byte read", w.Node)
		require.InDelta(t, 0.05, w.Prices.BaseNowCores, 0.005, "%s: the base its latest samples show (the fleet's 0.05 cores)", w.Node)
	}
	require.Len(t, prices, 2)
	costs := map[string]api.InstanceCost{}
	for _, ic := range plan.Costs {
		costs[ic.Instance] = ic
		p := prices[ic.Node]
		want := row*ic.RowsPerS + byt*ic.BytesPerS + read*ic.BinlogBytesPerS
		require.Positive(t, ic.BinlogBytesPerS, ic.Instance)
		require.InEpsilon(t, want, ic.CoresNow, 0.1, "%s: its rows, bytes and binlog at its wave's true prices", ic.Instance)
		require.InDelta(t, p.RowCores*ic.RowsPerS+p.ByteCores*ic.BytesPerS+p.BinlogByteCores*ic.BinlogBytesPerS, ic.CoresNow, 1e-9,
			"%s: at its wave's fitted prices", ic.Instance)
	}
	// a2 publishes less than a1 but reads a hundred times what it publishes: it costs more.
	require.Less(t, costs["a2"].BytesPerS, costs["a1"].BytesPerS)
	require.Greater(t, costs["a2"].CoresNow, 2*costs["a1"].CoresNow, "the filtered instance's reading is its cost")

	// A placement's hint with the binlog it will read is priced at each wave's prices.
	rows, bytes, binlog := 1000.0, 200_000.0, 3_000_000.0
	ans := placeHTTP(t, h, fmt.Sprintf(`{"instance":"new-1","algorithm":"utilisation","explain":"all","dry_run":true,"expected":{"rows_per_s":%g,"bytes_per_s":%g,"binlog_bytes_per_s":%g}}`, rows, bytes, binlog))
	require.Equal(t, &api.ExpectedWork{Work: api.Work{RowsPerS: rows, BytesPerS: bytes, BinlogBytesPerS: binlog}, Source: api.ExpectedHint}, ans.Expected)
	for node, p := range prices {
		require.InDelta(t, p.RowCores*rows+p.ByteCores*bytes+p.BinlogByteCores*binlog, scoreOf(t, ans, node).Parts["cost_cores"], 1e-6, node)
	}
	// Without the binlog: the bytes at the fleet's ratio of binlog read to bytes published.
	ans = placeHTTP(t, h, fmt.Sprintf(`{"instance":"new-2","algorithm":"utilisation","explain":"all","dry_run":true,"expected":{"rows_per_s":%g,"bytes_per_s":%g}}`, rows, bytes))
	var sumBytes, sumRead float64
	for _, ic := range plan.Costs {
		sumBytes, sumRead = sumBytes+ic.BytesPerS, sumRead+ic.BinlogBytesPerS
	}
	require.InEpsilon(t, bytes*sumRead/sumBytes, ans.Expected.BinlogBytesPerS, 0.05, "the fleet's ratio (its instances' levels, as the plan's)")
	require.Contains(t, ans.Expected.Note, "binlog read from the bytes/s at the fleet's")
}
