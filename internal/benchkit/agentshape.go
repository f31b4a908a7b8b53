package benchkit

// SeriesShape says how the agent emits one group of metrics (agent/collector/*): the
// label its per-object points carry ("" for node-level only), and whether a node-level
// total is sent as well.
type SeriesShape struct {
	Names []string
	Label string
	Total bool
}

// AgentShape is every group the agent emits: the judge's store benchmarks
// (storetest.AgentBatch), the alarm's and the dashboards' integration test build their
// points from it.
var AgentShape = []SeriesShape{
	{[]string{"cpu.util"}, "cpu", true},
	{[]string{"load.1", "load.5", "load.15", "mem.used_pct", "mem.total_bytes", "mem.available_bytes",
		"swap.used_pct", "swap.used_bytes", "go.heap_bytes", "go.gc_pause_p99_s", "go.goroutines", "wave.instances",
		"agent.buffer_len", "agent.dropped_batches", "agent.collector_errors", "agent.collect_seconds", "agent.rss_bytes"}, "", true},
	{[]string{"net.rx_bps", "net.tx_bps"}, "iface", true},
	{[]string{"disk.used_pct"}, "mount", false},
	{[]string{"disk.read_bps", "disk.write_bps", "disk.read_iops", "disk.write_iops"}, "device", true},
	{[]string{"wave.tps", "wave.lag_s", "wave.publish_errors"}, "instance", true},
	{[]string{"process.count", "process.rss_bytes", "process.cpu_pct"}, "process", false},
	{[]string{"agent.collector_up"}, "collector", false},
}

// agentLabels are the label sets of AgentPoints, two objects per label, shared by every
// batch (store.Buffered copies what it queues).
var agentLabels = func() map[string][2]map[string]string {
	m := map[string][2]map[string]string{}
	for _, s := range AgentShape {
		if s.Label != "" {
			m[s.Label] = [2]map[string]string{{s.Label: "a"}, {s.Label: "b"}}
		}
	}
	return m
}()

// AgentPoints calls point for each point of one agent tick, shaped as the agent's
// collectors emit them with two cores (per_cpu), two interfaces, mounts, disks, wave
// instances and processes: 55 points, 27 of them node-level (labels nil), the rest over
// 12 label sets, which every tick shares. seq varies the values.
func AgentPoints(seq int, point func(name string, labels map[string]string, v float64)) {
	v := float64(seq % 1000)
	for _, s := range AgentShape {
		for _, name := range s.Names {
			if s.Label == "" || s.Total {
				point(name, nil, v)
			}
			if s.Label != "" {
				for i, labels := range agentLabels[s.Label] {
					point(name, labels, v+float64(i))
				}
			}
		}
	}
}
