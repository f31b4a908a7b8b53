//go:build !agentonly

package main

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/deploy"
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

// DefaultPolicies are the policies `up` runs without --policies: deploy/policies.yaml,
// the ones install.sh installs for the alarm (a dead agent, high CPU, memory and disk,
// replication lag, a capture instance that is not running, publish errors and the
// cluster's capacity), all to the log channel.
func DefaultPolicies() ([]*policy.Policy, error) {
	return policy.Parse(bytes.NewReader(deploy.Policies), "built-in policies (deploy/policies.yaml)")
}

// LogChannel is the channel every `up` has: alerts as warnings in its log. Every policy
// of up notifies it, whether or not the policy names it, so that the log is the one place
// that shows every alert.
const LogChannel = "log"

// Channels are the alarm's notification channels.
type Channels struct {
	Notifiers map[string]notify.Notifier
	// Desc describes each, without secrets, for the start-up log.
	Desc []string
	// File is the --channels file they came from; empty for the log channel alone.
	File string
}

// alarmFile is alarm.yaml as `up --channels` reads it: the alarm's own config type, so
// that the alarm's file is accepted as it is, but a defined type without its Validate,
// since a file holding only a channels: section is valid for up and only the channels
// are used (the bus, coordinator and HTTP of up are its own).
type alarmFile alarm.Config

// LoadChannels builds the log channel plus, when path is set, the channels of a YAML file
// in alarm.yaml's format: the alarm's config file itself, or a file with only its
// "channels:" section. Every channel must build: one whose secret file (url_file,
// password_file…) cannot be read is an error naming the channel and the file, since a
// channel given on purpose and silently left out would lose the alerts sent to it.
func LoadChannels(path string, logger *slog.Logger) (Channels, error) {
	var ac alarm.Config
	if path != "" {
		var f alarmFile
		if err := config.Load(path, &f); err != nil {
			return Channels{}, err
		}
		if len(f.Channels) == 0 {
			return Channels{}, fmt.Errorf("%s: no channels: want a mapping under \"channels:\"", path)
		}
		if ch, ok := f.Channels[LogChannel]; ok && ch.Kind != "log" {
			return Channels{}, fmt.Errorf("%s: channels.%s is kind %q: the name %q is up's log channel, which every policy notifies; give this channel another name", path, LogChannel, ch.Kind, LogChannel)
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
		return Channels{}, config.Locate(path, err)
	}
	n, desc, err := ac.BuildChannels(logger)
	if err != nil {
		return Channels{}, config.Locate(path, err)
	}
	return Channels{Notifiers: n, Desc: desc, File: path}, nil
}

// LoadPolicies reads a policy file, or returns DefaultPolicies sent to every channel of
// chans when path is empty. Every policy notifies LogChannel too.
//
// With a channels file (chans.File), every channel a policy names must be in it: a
// misspelt channel is an error naming the policy and the channel. Without one, a policy
// naming channels up does not have (those of the alarm's config, say) still runs, its
// alerts going to the log: toLog lists those channels, for the caller to say so once.
func LoadPolicies(path string, chans Channels) (pols []*policy.Policy, toLog []string, err error) {
	if path == "" {
		pols, err := DefaultPolicies()
		if err != nil {
			return nil, nil, err
		}
		for _, p := range pols {
			p.Channels = channelNames(chans)
		}
		return pols, nil, nil
	}
	pols, err = policy.Load(path)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pols {
		kept := make([]string, 0, len(p.Channels)+1)
		for _, c := range p.Channels {
			switch {
			case chans.Notifiers[c] != nil:
				kept = append(kept, c)
			case chans.File != "":
				return nil, nil, fmt.Errorf("%s:%d: policy %q names channel %q, which -channels %s does not configure (it has %s)",
					path, p.Line, p.Name, c, chans.File, strings.Join(channelNames(chans), ", "))
			default:
				if !slices.Contains(toLog, c) {
					toLog = append(toLog, c)
				}
			}
		}
		if !slices.Contains(kept, LogChannel) {
			kept = append(kept, LogChannel)
		}
		p.Channels = kept
	}
	slices.Sort(toLog)
	return pols, toLog, nil
}

func channelNames(chans Channels) []string {
	names := make([]string, 0, len(chans.Notifiers))
	for n := range chans.Notifiers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// hostname is the default node id.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
