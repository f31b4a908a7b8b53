// Package testenv finds the real test services (docs/design.md, "Test services") for
// integration tests. A test asks for a service by its variable; when the variable is
// unset the test is skipped, except under CI=true, where it fails naming the service.
// A set variable whose service does not answer always fails, naming the service.
package testenv

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Service names one test service and the variable that points at it.
type Service struct {
	Name string // "Kafka"
	Env  string // "BINLAKE_TEST_KAFKA"
}

// The four test services started by `make services-up`.
var (
	MySQL         = Service{"MariaDB", "BINLAKE_TEST_MYSQL"}
	ZooKeeper     = Service{"ZooKeeper", "BINLAKE_TEST_ZK"}
	Kafka         = Service{"Kafka", "BINLAKE_TEST_KAFKA"}
	Elasticsearch = Service{"Elasticsearch-API engine", "BINLAKE_TEST_ES"}
)

// InCI reports whether integration tests must run (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Require returns the service's address from its variable after checking that it accepts
// TCP connections. It skips the test when the variable is unset outside CI and fails it
// otherwise, naming the service.
func Require(t testing.TB, s Service) string {
	t.Helper()
	v := lookup(t, s)
	for _, hp := range HostPorts(v) {
		conn, err := net.DialTimeout("tcp", hp, 3*time.Second)
		if err != nil {
			// The variable's value is not printed: a DSN may carry a password.
			t.Fatalf("%s is unreachable at %s (from %s): %v; start it with `make services-up`", s.Name, hp, s.Env, err)
		}
		conn.Close()
	}
	return v
}

// lookup returns s's variable; unset, it skips the test outside CI and fails it under
// CI=true, naming the service.
func lookup(t testing.TB, s Service) string {
	t.Helper()
	v := os.Getenv(s.Env)
	if v == "" {
		if InCI() {
			t.Fatalf("%s is required under CI=true but %s is not set (run `make services-up`)", s.Name, s.Env)
		}
		t.Skipf("integration test: %s not set (run `make services-up` and `eval $(deploy/testenv/services.sh env)`)", s.Env)
	}
	return v
}

// HostPorts extracts the host:port pairs from a service address: a comma-separated list
// ("127.0.0.1:2181,127.0.0.1:2182"), a URL ("http://127.0.0.1:9200") or a go-mysql/DSN
// style address ("root@tcp(127.0.0.1:3307)/").
func HostPorts(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if i := strings.Index(part, "tcp("); i >= 0 {
			part = part[i+4:]
			if j := strings.Index(part, ")"); j >= 0 {
				part = part[:j]
			}
		}
		if i := strings.Index(part, "://"); i >= 0 {
			part = part[i+3:]
		}
		if i := strings.IndexAny(part, "/?"); i >= 0 {
			part = part[:i]
		}
		if i := strings.LastIndex(part, "@"); i >= 0 {
			part = part[i+1:]
		}
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}
