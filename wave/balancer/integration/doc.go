// Package integration holds the balancer's process tests: real `binlake wave` processes
// on MariaDB, ZooKeeper and Kafka, balanced by an in-process judge (failover, scale-out,
// rebalance, whole-cluster restart). They live in a package of their own, not in wave's,
// so that go test runs them beside the wave's other long tests instead of after them: the
// two together were the suite's longest package.
package integration
