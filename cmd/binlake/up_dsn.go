//go:build !agentonly

package main

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"os"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/mysqldsn"
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
	// TLS, when set, makes the wave's connections to the source TLS (cluster.Source.TLS).
	TLS *config.ClientTLS
}

// String names the source for logs, without its password.
func (m MySQL) String() string { return m.User + "@tcp(" + m.Addr + ")/" }

// DefaultRowsTopic is the topic field of the rows of the default subscription.
const DefaultRowsTopic = "binlake.rows"

// systemSchemas are left out of the default subscription: their changes are the server's
// own bookkeeping, not application data.
var systemSchemas = []string{`mysql\..*`, `information_schema\..*`, `performance_schema\..*`, `sys\..*`}

// ParseDSN parses the source's address (internal/mysqldsn): the go-sql-driver form
// "user[:password]@tcp(host:port)[/]", "user[:password]@host:port" or the URL form
// "mysql://user[:password]@host[:port][/]" (port 3306 when left out; user and password
// %-encoded as in any URL). A database is refused, since the wave reads the whole
// server's binlog and filters with subscriptions; of the parameters only go-sql-driver's
// tls is taken: true (the system's CAs; -mysql-tls-ca names another), skip-verify (any
// certificate: for tests) or false. Errors show the DSN with its password as ***.
func ParseDSN(dsn string) (MySQL, error) {
	d, err := mysqldsn.Parse(dsn)
	if err != nil {
		return MySQL{}, err
	}
	if d.DB != "" {
		return MySQL{}, fmt.Errorf("mysql DSN %q: nothing may follow the address but '/': the wave reads every database and --mysql-sub selects tables", mysqldsn.Redact(dsn))
	}
	m := MySQL{Addr: d.Addr, User: d.User, Password: config.Secret(d.Password)}
	if d.Params == "" {
		return m, nil
	}
	q, err := url.ParseQuery(d.Params)
	if err != nil {
		return MySQL{}, fmt.Errorf("mysql DSN %q: parameters: %w", mysqldsn.Redact(dsn), err)
	}
	for k, v := range q {
		if k != "tls" || len(v) != 1 {
			return MySQL{}, fmt.Errorf("mysql DSN %q: parameter %s is not taken: the wave reads the source with the user and password alone, and tls (true, skip-verify or false) once", mysqldsn.Redact(dsn), k)
		}
		switch v[0] {
		case "true":
			m.TLS = &config.ClientTLS{}
		case "skip-verify":
			m.TLS = &config.ClientTLS{InsecureSkipVerify: true}
		case "false":
		default:
			return MySQL{}, fmt.Errorf("mysql DSN %q: tls=%s: want true, skip-verify or false (-mysql-tls-ca names a CA to trust)", mysqldsn.Redact(dsn), v[0])
		}
	}
	return m, nil
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
		Source:        cluster.Source{Addr: m.Addr, User: m.User, Flavor: m.Flavor, ServerID: id, TLS: m.TLS},
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
