// Package integration holds the balancer's process tests: real `binlake wave` processes
// on MariaDB, ZooKeeper and Kafka, balanced by an in-process judge (failover, scale-out,
// rebalance, whole-cluster restart), and the judge's load model learning a real wave's
// costs from what its agent reports. They live in a package of their own, not in wave's,
// so that go test runs them beside the wave's other long tests instead of after them: the
// two together were the suite's longest package.
//
// Each test has its own database, topics and ZooKeeper root (balanceEnv), yet they run
// one after another, not with t.Parallel: side by side under the whole suite's load, a
// move's pause went past its 5 s bound. A whole-cluster restart's cases stay one after
// another within their test, since each times its waves' starts against the others'.
// make test runs them without -race (PROCESS_TESTS): the balancer they test runs in the
// wave processes, built without it; the judge beside them is raced by its own package.
package integration
