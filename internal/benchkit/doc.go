// Package benchkit holds what the `binlake bench` commands share: a role started as a
// child process of the bench (Proc), the CPU time of processes (ours, a child's, the
// broker's found by its listening port), latency percentiles, the synthetic fleet whose
// agent-shaped metric batches the benches send, and the Kafka look-ups of a bench topic
// (end offsets, a group's committed offsets, deletion).
package benchkit
