//go:build !agentonly

package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
)

// MySQLPasswordEnv, when set, is the source's password; it wins over one in the DSN, so the
// password need not appear in the process list.
const MySQLPasswordEnv = "BINLAKE_MYSQL_PASSWORD"

// MySQL is the source `binlake up --mysql` captures.
type MySQL struct {
	Addr     string // host:port
	User     string
	Password config.Secret
	// Flavor is mysql or mariadb; empty asks the server (SELECT VERSION()).
	Flavor string
	// ServerID is the replica id the wave registers with; 0 derives a stable one from the
	// data folder, so two `binlake up` on two folders do not collide.
	ServerID uint32
	// Subscriptions route the rows; empty means every table outside the system schemas
	// to the topic DefaultRowsTopic.
	Subscriptions []cluster.Subscription
	// Snapshot emits the subscribed tables' existing rows at the first start on a data
	// folder, then the binlog from where the snapshot began.
	Snapshot bool
}

// String names the source for logs, without its password.
func (m MySQL) String() string { return m.User + "@tcp(" + m.Addr + ")/" }

// DefaultRowsTopic is the topic field of the rows of the default subscription.
const DefaultRowsTopic = "binlake.rows"

// systemSchemas are left out of the default subscription: their changes are the server's
// own bookkeeping, not application data.
var systemSchemas = []string{`mysql\..*`, `information_schema\..*`, `performance_schema\..*`, `sys\..*`}

// ParseDSN parses "user[:password]@tcp(host:port)[/]" (the go-sql-driver form),
// "user[:password]@host:port" or the URL form "mysql://user[:password]@host[:port][/]"
// (port 3306 when left out; user and password %-encoded as in any URL). A database or
// parameters after '/' are refused, since the wave reads the whole server's binlog and
// filters with subscriptions. Errors show the DSN with its password as ***.
func ParseDSN(dsn string) (MySQL, error) {
	rest := strings.TrimSpace(dsn)
	if scheme, tail, ok := strings.Cut(rest, "://"); ok {
		if scheme != "mysql" && scheme != "mariadb" {
			return MySQL{}, fmt.Errorf("mysql DSN: scheme %q: want mysql://user[:password]@host[:port]/ or user[:password]@tcp(host:port)/", scheme)
		}
		return parseURLDSN(scheme, tail)
	}
	var m MySQL
	at := strings.LastIndex(rest, "@") // passwords may contain '@'
	if at < 0 {
		return m, errors.New(`mysql DSN: no user: want user[:password]@tcp(host:port)/ or mysql://user[:password]@host:port/`)
	}
	user, pw, _ := strings.Cut(rest[:at], ":")
	m.User, m.Password = user, config.Secret(pw)
	rest = rest[at+1:]
	safe := strings.TrimSpace(dsn)
	if pw != "" {
		safe = strings.Replace(safe, ":"+pw+"@", ":***@", 1)
	}
	if strings.HasPrefix(rest, "tcp(") {
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return m, fmt.Errorf("mysql DSN %q: unclosed tcp(", safe)
		}
		m.Addr, rest = rest[len("tcp("):end], rest[end+1:]
	} else if strings.Contains(rest, "(") {
		return m, fmt.Errorf("mysql DSN %q: only tcp(host:port) is supported", safe)
	} else {
		m.Addr, rest, _ = strings.Cut(rest, "/")
		if rest != "" {
			rest = "/" + rest
		}
	}
	if rest != "" && rest != "/" {
		return m, fmt.Errorf("mysql DSN %q: nothing may follow the address but '/': the wave reads every database and --mysql-sub selects tables", safe)
	}
	if m.User == "" {
		return m, fmt.Errorf("mysql DSN %q: empty user", safe)
	}
	if err := checkHostPort(m.Addr); err != nil {
		return m, fmt.Errorf("mysql DSN %q: %w", safe, err)
	}
	return m, nil
}

// parseURLDSN parses what follows "mysql://".
func parseURLDSN(scheme, rest string) (MySQL, error) {
	var m MySQL
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return m, fmt.Errorf("mysql DSN %q: no user: want %s://user[:password]@host[:port]/", scheme+"://"+rest, scheme)
	}
	userinfo, hostpart := rest[:at], rest[at+1:]
	rawUser, rawPW, hasPW := strings.Cut(userinfo, ":")
	safe := scheme + "://" + rawUser
	if hasPW {
		safe += ":***"
	}
	safe += "@" + hostpart
	user, err := url.PathUnescape(rawUser)
	if err != nil {
		return m, fmt.Errorf("mysql DSN %q: the user has a bad %%-escape", safe)
	}
	pw, err := url.PathUnescape(rawPW)
	if err != nil {
		// The error would quote the password's bad escape: say only where it is.
		return m, fmt.Errorf("mysql DSN %q: the password has a bad %%-escape (write %%25 for a literal %%)", safe)
	}
	host, path, _ := strings.Cut(hostpart, "/")
	if path != "" || strings.ContainsAny(host, "?#") {
		return m, fmt.Errorf("mysql DSN %q: nothing may follow the address but '/': the wave reads every database and --mysql-sub selects tables", safe)
	}
	if user == "" {
		return m, fmt.Errorf("mysql DSN %q: empty user", safe)
	}
	if host == "" {
		return m, fmt.Errorf("mysql DSN %q: no host", safe)
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "3306") // a URL may leave the port out
	}
	if err := checkHostPort(host); err != nil {
		return m, fmt.Errorf("mysql DSN %q: %w", safe, err)
	}
	m.User, m.Password, m.Addr = user, config.Secret(pw), host
	return m, nil
}

// checkHostPort accepts host:port with a non-empty host and a port from 1 to 65535.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 1 to 65535", port)
	}
	return nil
}

// instance is the capture instance `up` defines for the source.
func (m MySQL) instance(dataDir string) *cluster.Instance {
	subs := m.Subscriptions
	if len(subs) == 0 {
		subs = []cluster.Subscription{{Name: "all", Topic: DefaultRowsTopic, Exclude: systemSchemas}}
	}
	id := m.ServerID
	if id == 0 {
		h := fnv.New32a()
		h.Write([]byte(dataDir))
		// Away from the small ids people give their real replicas.
		id = 100000 + h.Sum32()%1000000000
	}
	inst := &cluster.Instance{
		ID:            InstanceID,
		Source:        cluster.Source{Addr: m.Addr, User: m.User, Flavor: m.Flavor, ServerID: id},
		Subscriptions: subs,
	}
	if m.Snapshot {
		inst.Snapshot = &cluster.SnapshotOptions{Initial: true}
	}
	return inst
}

// InstanceID is the id of the capture instance of --mysql.
const InstanceID = "local"

// hostname is the default node id.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
