package testenv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// MySQLAddr is a parsed BINLAKE_TEST_MYSQL value.
type MySQLAddr struct {
	User     string
	Password string
	Addr     string // host:port
	DB       string // may be empty
}

// String renders the address in the go-sql-driver DSN form without the password, so it
// can go into test logs and failure messages.
func (a MySQLAddr) String() string {
	u := a.User
	if a.Password != "" {
		u += ":***"
	}
	return fmt.Sprintf("%s@tcp(%s)/%s", u, a.Addr, a.DB)
}

// ParseMySQLAddr parses the go-sql-driver style address used by BINLAKE_TEST_MYSQL,
// "user[:password]@tcp(host:port)/[db][?params]"; "user@host:port" is accepted too.
// Parameters after '?' are ignored.
func ParseMySQLAddr(v string) (MySQLAddr, error) {
	var a MySQLAddr
	rest := strings.TrimSpace(v)
	if rest == "" {
		return a, fmt.Errorf("mysql address is empty")
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest = rest[:i]
	}
	// The user part ends at the last '@' because passwords may contain '@'.
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		userinfo := rest[:i]
		rest = rest[i+1:]
		a.User, a.Password, _ = strings.Cut(userinfo, ":")
	}
	switch {
	case strings.HasPrefix(rest, "tcp("):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return a, fmt.Errorf("mysql address %q: unclosed tcp(", redact(v, a.Password))
		}
		a.Addr = rest[len("tcp("):end]
		rest = rest[end+1:]
	case strings.Contains(rest, "("):
		return a, fmt.Errorf("mysql address %q: only the tcp network is supported", redact(v, a.Password))
	default:
		a.Addr, rest, _ = strings.Cut(rest, "/")
		if rest != "" {
			rest = "/" + rest
		}
	}
	if rest != "" {
		if rest[0] != '/' {
			return a, fmt.Errorf("mysql address %q: want /database after the host, got %q", redact(v, a.Password), rest)
		}
		a.DB = rest[1:]
	}
	if a.User == "" {
		return a, fmt.Errorf("mysql address %q: no user (want user@tcp(host:port)/)", redact(v, a.Password))
	}
	if _, port, err := net.SplitHostPort(a.Addr); err != nil || port == "" {
		return a, fmt.Errorf("mysql address %q: want host:port inside tcp(...), got %q", redact(v, a.Password), a.Addr)
	}
	return a, nil
}

// redact hides the password in an address quoted in an error.
func redact(v, password string) string {
	if password == "" {
		return v
	}
	return strings.ReplaceAll(v, password, "***")
}

// RequireMySQL is Require for MySQL that also parses the address, failing the test when
// BINLAKE_TEST_MYSQL is malformed.
func RequireMySQL(t testing.TB) MySQLAddr {
	t.Helper()
	v := Require(t, MySQL)
	a, err := ParseMySQLAddr(v)
	if err != nil {
		t.Fatalf("%s: %v", MySQL.Env, err)
	}
	return a
}

// ReplicaServerID returns a random replica server id for a test's binlog reader. MariaDB
// lets one connection per server id read the binlog and drops the older one when a second
// arrives, so a fixed id in a test makes parallel runs on the shared test server (another
// checkout, another package) cut each other off.
func ReplicaServerID() uint32 {
	const low = 1000 // below: ids a hand-configured replica may use
	return low + rand.Uint32N(math.MaxUint32-low)
}

// ScratchDatabase connects to the test MySQL/MariaDB, creates a database named prefix
// and a suffix of the run's own, and drops it when the test ends. exec runs a statement
// and fails the test on an error.
func ScratchDatabase(t testing.TB, prefix string) (db string, exec func(q string), conn *client.Conn) {
	t.Helper()
	a := RequireMySQL(t)
	conn, err := client.Connect(a.Addr, a.User, a.Password, "")
	if err != nil {
		t.Fatalf("connect to MariaDB at %s: %v", a, err)
	}
	db = fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()%1e9)
	exec = func(q string) {
		t.Helper()
		if _, err := conn.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE " + db)
	t.Cleanup(func() {
		conn.Execute("DROP DATABASE IF EXISTS " + db)
		conn.Close()
	})
	return db, exec, conn
}
