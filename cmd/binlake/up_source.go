//go:build !agentonly

package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave"
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
	Subscriptions []wave.Subscription
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

// ParseDSN parses "user[:password]@tcp(host:port)[/]" (the go-sql-driver form) or
// "user[:password]@host:port". A database or parameters after '/' are refused, since
// the wave reads the whole server's binlog and filters with subscriptions.
func ParseDSN(dsn string) (MySQL, error) {
	var m MySQL
	rest := strings.TrimSpace(dsn)
	at := strings.LastIndex(rest, "@") // passwords may contain '@'
	if at < 0 {
		return m, errors.New(`mysql DSN: no user: want user[:password]@tcp(host:port)/`)
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
	if host, port, err := net.SplitHostPort(m.Addr); err != nil || host == "" || port == "" {
		return m, fmt.Errorf("mysql DSN %q: want host:port, got %q", safe, m.Addr)
	}
	return m, nil
}

// instance is the capture instance `up` defines for the source.
func (m MySQL) instance(dataDir string) *wave.Instance {
	subs := m.Subscriptions
	if len(subs) == 0 {
		subs = []wave.Subscription{{Name: "all", Topic: DefaultRowsTopic, Exclude: systemSchemas}}
	}
	id := m.ServerID
	if id == 0 {
		h := fnv.New32a()
		h.Write([]byte(dataDir))
		// Away from the small ids people give their real replicas.
		id = 100000 + h.Sum32()%1000000000
	}
	inst := &wave.Instance{
		ID:            InstanceID,
		Source:        wave.Source{Addr: m.Addr, User: m.User, Flavor: m.Flavor, ServerID: id},
		Subscriptions: subs,
	}
	if m.Snapshot {
		inst.Snapshot = &wave.SnapshotOptions{Initial: true}
	}
	return inst
}

// InstanceID is the id of the capture instance of --mysql.
const InstanceID = "local"

//go:embed up_policies.yaml
var defaultPolicies []byte

// DefaultPolicies are the policies `up` runs without --policies: a dead agent, high CPU,
// memory and disk, replication lag, a capture instance that is not running, publish
// errors and the cluster's capacity (add a wave), all to the log channel.
func DefaultPolicies() ([]*policy.Policy, error) {
	return policy.Parse(bytes.NewReader(defaultPolicies), "built-in policies")
}

// LogChannel is the channel every `up` has: alerts as warnings in its log.
const LogChannel = "log"

// Channels are the alarm's notification channels.
type Channels struct {
	Notifiers map[string]notify.Notifier
	// Desc describes each, without secrets, for the start-up log.
	Desc []string
}

// channelsFile is the part of alarm.yaml `up --channels` reads.
type channelsFile struct {
	Channels map[string]alarm.Channel `yaml:"channels"`
}

// LoadChannels builds the log channel plus, when path is set, the channels of a YAML file
// holding a "channels:" section in alarm.yaml's format.
func LoadChannels(path string, logger *slog.Logger) (Channels, error) {
	var ac alarm.Config
	if path != "" {
		var f channelsFile
		if err := config.Load(path, &f); err != nil {
			return Channels{}, err
		}
		if len(f.Channels) == 0 {
			return Channels{}, fmt.Errorf("%s: no channels: want a mapping under \"channels:\"", path)
		}
		ac.Channels = f.Channels
	}
	if ac.Channels == nil {
		ac.Channels = map[string]alarm.Channel{}
	}
	if _, ok := ac.Channels[LogChannel]; !ok {
		ac.Channels[LogChannel] = alarm.Channel{Kind: "log"}
	}
	// Validate checks each channel; the bus and coordinator of `up` are its own.
	ac.Bus.Kind = alarm.BusNone
	if err := ac.Validate(); err != nil {
		return Channels{}, fmt.Errorf("%s: %w", path, err)
	}
	n, desc, err := ac.BuildChannels(logger)
	if err != nil {
		return Channels{}, fmt.Errorf("%s: %w", path, err)
	}
	return Channels{Notifiers: n, Desc: desc}, nil
}

// LoadPolicies reads a policy file, or returns DefaultPolicies sent to every channel of
// chans when path is empty. Every channel a policy names must be in chans.
func LoadPolicies(path string, chans Channels) ([]*policy.Policy, error) {
	if path == "" {
		pols, err := DefaultPolicies()
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(chans.Notifiers))
		for n := range chans.Notifiers {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, p := range pols {
			p.Channels = names
		}
		return pols, nil
	}
	pols, err := policy.Load(path)
	if err != nil {
		return nil, err
	}
	for _, p := range pols {
		for _, c := range p.Channels {
			if chans.Notifiers[c] == nil {
				return nil, fmt.Errorf("%s:%d: policy %q names channel %q: up has %q plus those of --channels", path, p.Line, p.Name, c, LogChannel)
			}
		}
	}
	return pols, nil
}

// hostname is the default node id.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
