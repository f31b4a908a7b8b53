package remotewrite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
)

const t0 = int64(1_700_000_000_000)

// scrapeOf is one node_exporter scrape of host h at ts: two CPUs with the given idle and
// busy seconds each, memory, load, a network interface and the loopback, two mounts.
func scrapeOf(h string, ts int64, idle, busy, rx float64) []Series {
	l := func(kv ...string) map[string]string {
		m := map[string]string{"instance": h + ":9100", "job": "node"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	at := func(v float64) Sample { return Sample{v, ts} }
	return []Series{
		series(nodeCPU, l("cpu", "0", "mode", "idle"), at(idle)),
		series(nodeCPU, l("cpu", "0", "mode", "user"), at(busy)),
		series(nodeCPU, l("cpu", "1", "mode", "idle"), at(idle)),
		series(nodeCPU, l("cpu", "1", "mode", "system"), at(busy)),
		series(nodeMemTotal, l(), at(8e9)),
		series(nodeMemAvail, l(), at(2e9)),
		series(nodeLoad1, l(), at(1.5)),
		series(nodeNetRx, l("device", "eth0"), at(rx)),
		series(nodeNetTx, l("device", "eth0"), at(rx/2)),
		series(nodeNetRx, l("device", "lo"), at(1e12)), // not counted
		series(nodeFSSize, l("mountpoint", "/", "fstype", "ext4"), at(100e9)),
		series(nodeFSAvail, l("mountpoint", "/", "fstype", "ext4"), at(25e9)),
		series(nodeFSFree, l("mountpoint", "/", "fstype", "ext4"), at(30e9)), // 5 GB reserved for root
		series("node_boot_time_seconds", l(), at(1.6e9)),
	}
}

func points(b metric.Batch) map[string]float64 {
	out := map[string]float64{}
	for _, p := range b.Points {
		k := p.Name
		if m := p.Labels["mount"]; m != "" {
			k += "{" + m + "}"
		}
		out[k] = p.Value
	}
	return out
}

func TestMapNodeExporter(t *testing.T) {
	m := NewMapper(MapOptions{})
	b1, st := m.Map(Request{Series: scrapeOf("wave-1", t0, 100, 100, 1000)})
	require.Equal(t, Stats{Mapped: 13, Dropped: 1}, st) // node_boot_time_seconds is not mapped
	require.Len(t, b1, 1)
	require.Equal(t, "wave-1", b1[0].Node) // instance without its port
	require.Equal(t, time.UnixMilli(t0).UTC(), b1[0].TS)
	require.Equal(t, 15.0, b1[0].IntervalS) // the default before a second scrape
	// No rates yet: they need a previous scrape.
	// The disk as df's Use%: 70 GB used of the 95 GB users can hold.
	require.Equal(t, map[string]float64{"cpu.cores": 2, "mem.used_pct": 75, "load.1": 1.5, "disk.used_pct{/}": 100 * 70e9 / 95e9}, points(b1[0]))

	// 10 s later each CPU spent 2 s idle and 8 s busy: 80 % busy; eth0 received 5,000 bytes.
	b2, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+10_000, 102, 108, 6000)})
	require.Len(t, b2, 1)
	require.Equal(t, 10.0, b2[0].IntervalS)
	p := points(b2[0])
	require.InDelta(t, 80, p["cpu.util"], 1e-9)
	require.InDelta(t, 500, p["net.rx_bps"], 1e-9)
	require.InDelta(t, 250, p["net.tx_bps"], 1e-9)
	for _, b := range append(b1, b2...) {
		require.NoError(t, b.Validate())
	}

	// A restarted exporter's counters start again: no rate for that scrape, then rates again.
	b3, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+20_000, 1, 1, 10)})
	require.NotContains(t, points(b3[0]), "cpu.util")
	require.NotContains(t, points(b3[0]), "net.rx_bps")
	b4, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+30_000, 6, 6, 20)})
	require.InDelta(t, 50, points(b4[0])["cpu.util"], 1e-9)

	// An older request arriving late does not move the rates' base back.
	m.Map(Request{Series: scrapeOf("wave-1", t0, 100, 100, 1000)})
	b5, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+40_000, 11, 11, 30)})
	require.InDelta(t, 50, points(b5[0])["cpu.util"], 1e-9)
}

func TestMapNodeLabelAndUnmapped(t *testing.T) {
	withNode := series("node_load1", map[string]string{"instance": "10.0.0.5:9100", "node": "wave-7"}, Sample{2, t0})
	noNode := series("node_load1", map[string]string{"job": "node"}, Sample{2, t0})
	custom := series("node_load1", map[string]string{"host": "db-1"}, Sample{3, t0})
	raw := series("node_boot_time_seconds", map[string]string{"instance": "h:9100", "job": "node"}, Sample{1.6e9, t0})
	invalidName := series("node_memory_Active_bytes", map[string]string{"instance": "h:9100"}, Sample{1, t0})

	bs, st := NewMapper(MapOptions{}).Map(Request{Series: []Series{withNode, noNode}})
	require.Equal(t, Stats{Mapped: 1, Dropped: 1}, st)
	require.Equal(t, "wave-7", bs[0].Node)

	bs, _ = NewMapper(MapOptions{NodeLabel: "host"}).Map(Request{Series: []Series{custom}})
	require.Equal(t, "db-1", bs[0].Node)

	bs, st = NewMapper(MapOptions{KeepUnmapped: true}).Map(Request{Series: []Series{raw, invalidName}})
	require.Equal(t, Stats{Raw: 1, Dropped: 1}, st)
	require.Equal(t, []metric.Point{{Name: "node_boot_time_seconds", Value: 1.6e9, Labels: map[string]string{"job": "node"}}}, bs[0].Points)
	require.NoError(t, bs[0].Validate())
}

// A scrape with more points than a batch holds is split.
func TestMapSplitsLargeScrapes(t *testing.T) {
	var ss []Series
	for i := range metric.MaxPoints + 5 {
		ss = append(ss, series("app_requests", map[string]string{"instance": "h:1", "path": string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))}, Sample{1, t0}))
	}
	bs, st := NewMapper(MapOptions{KeepUnmapped: true}).Map(Request{Series: ss})
	require.Equal(t, metric.MaxPoints+5, st.Raw)
	require.Len(t, bs, 2)
	require.Len(t, bs[0].Points, metric.MaxPoints)
	require.Len(t, bs[1].Points, 5)
}
