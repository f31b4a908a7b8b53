// Package waveprom names the wave's own series in its Prometheus exposition (its
// /metrics): the wave registers them and the agent's wave collector reads them, so both
// take the names from here rather than one from the other.
package waveprom

// The wave's series.
const (
	RowsPublished = "binlake_wave_rows_published_total"
	// BytesPublished counts the key and value bytes of the rows in RowsPublished.
	BytesPublished = "binlake_wave_bytes_published_total"
	InstancesLed   = "binlake_wave_instances_led"
	// BinlogBytesRead counts the bytes of the binlog events an instance read from its
	// source, those of tables no subscription takes included.
	BinlogBytesRead = "binlake_wave_binlog_bytes_read_total"
	// LagSeconds is each led instance's lag (docs/design.md, "Lag"): 0 when caught up.
	LagSeconds    = "binlake_wave_lag_seconds"
	PublishErrors = "binlake_wave_publish_errors_total"
	// InstanceRunning is 1 while an instance this wave leads captures, else 0, with its
	// state and the class of its error (wave.Reason).
	InstanceRunning = "binlake_wave_instance_running"
	// BalancerLeader is 1 on the cluster's balancer wave, 0 on the others: the agent
	// reports ClusterMeanLoad only where it is 1.
	BalancerLeader = "binlake_wave_balancer_leader"
	// ClusterMeanLoad is the mean load per live wave in the balancer's last plan,
	// exported by the balancer wave only (0 on the others).
	ClusterMeanLoad = "binlake_wave_balancer_mean_load"
	// ClusterMeanUtil is the live waves' mean peak utilisation in the balancer's last
	// plan (the utilisation model), exported by the balancer wave only.
	ClusterMeanUtil = "binlake_wave_balancer_mean_utilisation"
)

// The labels of the per-instance series.
const (
	LabelInstance = "instance"
	LabelState    = "state"
	LabelReason   = "reason"
)
