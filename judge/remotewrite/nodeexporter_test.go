package remotewrite

import (
	"math"
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

// mapAll maps each request in turn and returns every batch's points by name, under its
// node and time; a point twice is a failure.
func mapAll(t *testing.T, m *Mapper, reqs ...[]Series) map[string]map[int64]map[string]float64 {
	out := map[string]map[int64]map[string]float64{}
	for _, r := range reqs {
		bs, _ := m.Map(Request{Series: r})
		for _, b := range bs {
			require.NoError(t, b.Validate())
			ts := b.TS.UnixMilli()
			if out[b.Node] == nil {
				out[b.Node] = map[int64]map[string]float64{}
			}
			if out[b.Node][ts] == nil {
				out[b.Node][ts] = map[string]float64{}
			}
			for k, v := range points(b) {
				_, dup := out[b.Node][ts][k]
				require.False(t, dup, "%s at %d twice", k, ts)
				out[b.Node][ts][k] = v
			}
		}
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
	// The gauges at once; the cores and rates once the scrape is whole (the next one
	// begins). The disk as df's Use%: 70 GB used of the 95 GB users can hold.
	require.Equal(t, map[string]float64{"mem.used_pct": 75, "load.1": 1.5, "disk.used_pct{/}": 100 * 70e9 / 95e9}, points(b1[0]))

	// 10 s later each CPU spent 2 s idle and 8 s busy: 80 % busy; eth0 received 5,000 bytes.
	b2, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+10_000, 102, 108, 6000)})
	require.Len(t, b2, 2)
	require.Equal(t, map[string]float64{"cpu.cores": 2}, points(b2[0]), "the first scrape, whole: no rates yet")
	require.Equal(t, time.UnixMilli(t0).UTC(), b2[0].TS)
	require.Equal(t, 10.0, b2[1].IntervalS)
	b3, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+20_000, 1, 1, 10)}) // a restarted exporter
	p := points(b3[0])
	require.Equal(t, time.UnixMilli(t0+10_000).UTC(), b3[0].TS)
	require.InDelta(t, 80, p["cpu.util"], 1e-9)
	require.InDelta(t, 500, p["net.rx_bps"], 1e-9)
	require.InDelta(t, 250, p["net.tx_bps"], 1e-9)
	for _, b := range append(append(b1, b2...), b3...) {
		require.NoError(t, b.Validate())
	}

	// Its counters started again: no rate for that scrape, then rates again.
	b4, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+30_000, 6, 6, 20)})
	require.NotContains(t, points(b4[0]), "cpu.util")
	require.NotContains(t, points(b4[0]), "net.rx_bps")
	b5, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+40_000, 11, 11, 30)})
	require.InDelta(t, 50, points(b5[0])["cpu.util"], 1e-9)

	// An older request arriving late gives its gauges, and does not move the rates' base back.
	late, _ := m.Map(Request{Series: scrapeOf("wave-1", t0, 100, 100, 1000)})
	require.Len(t, late, 1)
	require.NotContains(t, points(late[0]), "cpu.cores")
	b6, _ := m.Map(Request{Series: scrapeOf("wave-1", t0+50_000, 16, 16, 40)})
	require.Equal(t, time.UnixMilli(t0+40_000).UTC(), b6[0].TS)
	require.InDelta(t, 50, points(b6[0])["cpu.util"], 1e-9)
}

// A scrape split across requests (Prometheus sends at most 500 samples a request, and its
// shards each take a share of the series) maps as the whole scrape does: read request by
// request, it lost its network rates, most of its cpu.util, and counted the cores of a
// part (an outside trial).
func TestMapSplitScrape(t *testing.T) {
	parts := func(ss []Series) [][]Series { // every third series to a request
		out := make([][]Series, 3)
		for i, s := range ss {
			out[i%3] = append(out[i%3], s)
		}
		return out
	}
	whole := mapAll(t, NewMapper(MapOptions{}), scrapeOf("w", t0, 100, 100, 1000), scrapeOf("w", t0+10_000, 102, 108, 6000), scrapeOf("w", t0+20_000, 103, 110, 7000))
	var reqs [][]Series
	for _, sc := range [][]Series{scrapeOf("w", t0, 100, 100, 1000), scrapeOf("w", t0+10_000, 102, 108, 6000), scrapeOf("w", t0+20_000, 103, 110, 7000)} {
		reqs = append(reqs, parts(sc)...)
	}
	split := mapAll(t, NewMapper(MapOptions{}), reqs...)
	require.Equal(t, whole, split)
	require.Equal(t, 2.0, split["w"][t0+10_000]["cpu.cores"])
	require.InDelta(t, 80, split["w"][t0+10_000]["cpu.util"], 1e-9)
	require.InDelta(t, 500, split["w"][t0+10_000]["net.rx_bps"], 1e-9)
}

// An interface that comes up (a container's veth, already at 1.5 GB) gives no rate until
// its second sample: summed over the devices before the rate, it made 100 MB/s of a
// host receiving 100 B/s (an outside trial). One that goes away takes nothing with it.
func TestMapNewInterfaceIsNoSpike(t *testing.T) {
	l := map[string]string{"instance": "h:9100"}
	dev := func(d string, v float64, ts int64) Series {
		return series(nodeNetRx, map[string]string{"instance": l["instance"], "device": d}, Sample{v, ts})
	}
	got := mapAll(t, NewMapper(MapOptions{}),
		[]Series{dev("eth0", 1000, t0)},
		[]Series{dev("eth0", 2500, t0+15_000)},
		[]Series{dev("eth0", 4000, t0+30_000), dev("veth1234", 1.5e9, t0+30_000)},
		[]Series{dev("eth0", 5500, t0+45_000)}, // veth1234 gone
		[]Series{dev("eth0", 7000, t0+60_000)})
	for _, ts := range []int64{t0 + 15_000, t0 + 30_000, t0 + 45_000} {
		require.InDelta(t, 100, got["h"][ts]["net.rx_bps"], 1e-9, "at +%ds", (ts-t0)/1000)
	}
}

// Prometheus's staleness markers (a NaN as a series ends: its target went away) are
// dropped, not taken for a value: they failed their whole batch, counted as
// undecodable, and poisoned the counters' base so that the next scrape had no rate.
func TestMapStalenessMarkers(t *testing.T) {
	stale := math.Float64frombits(0x7ff0000000000002) // Prometheus's StaleNaN
	m := NewMapper(MapOptions{})
	mapAll(t, m, scrapeOf("w", t0, 100, 100, 1000))
	var gone []Series
	for _, s := range scrapeOf("w", t0+5_000, 0, 0, 0) {
		s.Samples[0].Value = stale
		gone = append(gone, s)
	}
	bs, st := m.Map(Request{Series: gone})
	require.Equal(t, 14, st.Dropped)
	for _, b := range bs {
		require.NoError(t, b.Validate())
	}
	got := mapAll(t, m, scrapeOf("w", t0+10_000, 102, 108, 6000), scrapeOf("w", t0+20_000, 103, 110, 7000))
	require.InDelta(t, 80, got["w"][t0+10_000]["cpu.util"], 1e-9, "the rate against the scrape before the markers")
}

// A node whose scrapes stop (its exporter, or its sender's share of it) has its last
// scrape go out once another node's samples are two of its intervals newer.
func TestMapLastScrapeOfAStoppedNode(t *testing.T) {
	m := NewMapper(MapOptions{})
	got := mapAll(t, m, scrapeOf("a", t0, 100, 100, 1000), scrapeOf("b", t0, 100, 100, 1000),
		scrapeOf("a", t0+15_000, 102, 108, 6000), scrapeOf("b", t0+15_000, 102, 108, 6000)) // then a stops
	require.NotContains(t, got["a"][t0+15_000], "cpu.cores")
	bs, _ := m.Map(Request{Series: scrapeOf("b", t0+30_000, 103, 110, 7000)})
	nodes := map[string]bool{}
	for _, b := range bs {
		nodes[b.Node] = true
	}
	require.False(t, nodes["a"], "one interval: a's scrape may still be coming")
	bs, _ = m.Map(Request{Series: scrapeOf("b", t0+45_100, 104, 112, 8000)})
	var last map[string]float64
	for _, b := range bs {
		if b.Node == "a" {
			last = points(b)
		}
	}
	require.InDelta(t, 80, last["cpu.util"], 1e-9, "a's last scrape, once b's samples are two intervals newer")
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
