// Package metric is the metric batch that agents send and alarm and judge consume
// (topic "binlake.metrics", key = node id), with a strict, size-bounded JSON codec.
package metric

import (
	"slices"
	"time"
)

// Topic is the bus topic that carries metric batches.
const Topic = "binlake.metrics"

// TopicPartitions is the partition count every role gives the metric topic when it
// creates it (the agent, the alarm or the judge, whichever comes first), so that the
// topic does not depend on which started first and several alarms can share its load.
const TopicPartitions = 3

// Canonical point names (the data contract of the metric batch).
const (
	CPUUtil = "cpu.util"
	// CPUCores is optional: when a node reports it, placement divides its load average
	// by it; without it, load averages are compared across nodes as they are.
	CPUCores        = "cpu.cores"
	Load1           = "load.1"
	Load5           = "load.5"
	Load15          = "load.15"
	MemUsedPct      = "mem.used_pct"
	NetRxBps        = "net.rx_bps"
	NetTxBps        = "net.tx_bps"
	DiskUsedPct     = "disk.used_pct"
	GoHeapBytes     = "go.heap_bytes"
	GoGCPauseP99    = "go.gc_pause_p99_s"
	GoGoroutines    = "go.goroutines"
	WaveTPS         = "wave.tps"
	WaveInstances   = "wave.instances"
	WaveLagSeconds  = "wave.lag_s"
	WavePublishErrs = "wave.publish_errors"
	// WaveInstanceRunning is 1 while a capture instance runs, 0 while its wave cannot run
	// it (labels instance, state, reason).
	WaveInstanceRunning = "wave.instance_running"
	// WaveBytesPerS is the bytes (keys and values) a wave publishes per second, per
	// instance and summed (unlabelled).
	WaveBytesPerS = "wave.bytes_per_s"
	// WaveBinlogBytesPerS is the binlog a wave reads from its instances' sources per
	// second, every event's bytes (tables no subscription takes included), per instance
	// and summed (unlabelled): reading costs CPU beyond what is published.
	WaveBinlogBytesPerS = "wave.binlog_bytes_per_s"
	// WaveCPUCores is the CPU the wave process uses, in cores (unlabelled): the judge
	// splits it between instances by their rows to cost each one.
	WaveCPUCores = "wave.cpu_cores"
	// WaveClusterLoad is the cluster's mean load per live wave in the judge's cost units
	// (rows/s plus a floor per instance), from the balancer's last plan (unlabelled). Only
	// the balancer wave's node reports it; the capacity alert watches it.
	WaveClusterLoad = "wave.cluster_load"
	// HostInfo is 1, labelled boot_id: the running kernel's boot id, the same for every
	// agent on one host (containers included) and another after a reboot. The judge
	// reads it to know the waves that share a host's cores (host collector).
	HostInfo = "host.info"
	// WaveClusterUtil is the cluster's mean peak utilisation (CPU cores over the hosts'
	// cores, weighed by cores) from the balancer's last plan in the utilisation model
	// (unlabelled; the balancer wave's node only). The capacity alert watches it.
	WaveClusterUtil = "wave.cluster_utilisation"
)

// CanonicalNames returns the canonical point names above, sorted: what a policy or a
// dashboard may rely on whatever the agents' configuration.
func CanonicalNames() []string {
	names := []string{
		CPUCores, CPUUtil, GoGCPauseP99, GoGoroutines, GoHeapBytes, HostInfo, Load1, Load15, Load5,
		MemUsedPct, NetRxBps, NetTxBps, DiskUsedPct, WaveBinlogBytesPerS, WaveBytesPerS, WaveCPUCores,
		WaveClusterLoad, WaveClusterUtil, WaveInstanceRunning, WaveInstances,
		WaveLagSeconds, WavePublishErrs, WaveTPS,
	}
	slices.Sort(names)
	return names
}

// Batch is what one agent sends per tick.
type Batch struct {
	Node      string    `json:"node"`
	TS        time.Time `json:"ts"`
	IntervalS float64   `json:"interval_s"`
	Points    []Point   `json:"points"`
}

// Point is one measurement.
type Point struct {
	Name   string            `json:"name"`
	Value  float64           `json:"value"`
	Labels map[string]string `json:"labels,omitempty"`
}
