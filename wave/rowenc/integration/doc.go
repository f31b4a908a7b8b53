// Package integration holds the message formats' process tests: a real `binlake wave`
// publishes a table of every column type in each format (snapshot, inserts, updates,
// deletes, a DDL, a kill -9), and the consumers those formats' users run read it back:
// Apache Flink's flink-json formats, Canal's own Java client, a Go consumer of the
// generated protobuf types; each state must equal a SELECT of the table. They live in a
// package of their own, not in wave's, so that go test runs them beside the wave's other
// long tests.
package integration
