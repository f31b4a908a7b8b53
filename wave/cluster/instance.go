package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/rowenc"
)

// What to do with a row message larger than the sink accepts.
const (
	TooLargeStop = "stop" // stop the instance with an error (default)
	TooLargeSkip = "skip" // drop the message and count it
)

// What to do with a change the binlog holds but not as rows the wave can read: a data
// change logged as a statement (binlog_format STATEMENT or MIXED), rows logged without
// every column (binlog_row_image MINIMAL or NOBLOB), or the XA COMMIT of a transaction
// whose prepared rows the capture never read or could not hold.
const (
	UnreadableStop = "stop" // stop the instance with an error (default)
	UnreadableSkip = "skip" // log it, count it and go on without its rows
)

// Flavors of source.
const (
	FlavorMySQL   = "mysql"
	FlavorMariaDB = "mariadb"
)

// Instance is one capture instance: a source and the subscriptions fed from its one
// binlog connection. It is stored as JSON at "instances/<id>" in the coordinator and
// written from a YAML file by `binlake instance add`.
type Instance struct {
	ID     string `json:"id" yaml:"id"`
	Source Source `json:"source" yaml:"source"`
	// Start is where the first capture begins when no offset is committed yet. When
	// empty: where the source's binlog was when the instance was added (AddedAt), else
	// (an instance stored without it) the source's current position at the first start.
	// `binlake instance add` stores the source's end as Start when it can read it.
	Start *Position `json:"start,omitempty" yaml:"start"`
	// AddedAt is when `binlake instance add` stored an instance without a start whose
	// source it could not read (Unix seconds): the first capture begins at the start of
	// the binlog file the source was writing then (capture.PositionAt), so that the rows
	// written before a wave first connects are not skipped. Not part of the YAML.
	AddedAt int64 `json:"added_at,omitempty" yaml:"-"`
	// Subscriptions route rows to topics; a row matching several goes to each.
	Subscriptions []Subscription `json:"subscriptions" yaml:"subscriptions"`
	// OnTooLarge is "stop" (default) or "skip".
	OnTooLarge string `json:"on_too_large,omitempty" yaml:"on_too_large"`
	// OnUnreadable is "stop" (default) or "skip": see UnreadableStop.
	OnUnreadable string `json:"on_unreadable,omitempty" yaml:"on_unreadable"`
	// Snapshot configures the reading of the tables' existing rows (snapshot.go).
	Snapshot *SnapshotOptions `json:"snapshot,omitempty" yaml:"snapshot"`
	// Pinned keeps the instance on its wave: the balancer never moves it, except off a
	// dead wave.
	Pinned bool `json:"pinned,omitempty" yaml:"pinned"`

	// asNew makes Validate ask CheckNew's too (AsNew): a definition being added.
	asNew bool
}

// AsNew makes Validate refuse what CheckNew refuses too, for a definition being added
// (add, set -f, add --check): its problems then come in one list with the others.
func (in *Instance) AsNew() { in.asNew = true }

// Source is the MySQL or MariaDB server read as a replica. The password is never stored
// in the coordinator: each wave reads it from PasswordEnv or PasswordFile on its host.
type Source struct {
	Addr         string `json:"addr" yaml:"addr"` // host:port
	User         string `json:"user" yaml:"user"`
	PasswordEnv  string `json:"password_env,omitempty" yaml:"password_env"`
	PasswordFile string `json:"password_file,omitempty" yaml:"password_file"`
	Flavor       string `json:"flavor" yaml:"flavor"` // mysql or mariadb
	// ServerID is the replica server id the wave registers with; unique among the
	// source's replicas.
	ServerID uint32 `json:"server_id" yaml:"server_id"`
	// TLS, when set, makes every connection to the source TLS (the binlog stream, the
	// snapshot, the schema reads): for servers with require_secure_transport, users
	// created REQUIRE SSL, or any network that is not trusted. `tls: {}` trusts the
	// system's CAs; the files are read on each wave's host, as password_file is.
	TLS *config.ClientTLS `json:"tls,omitempty" yaml:"tls"`
}

// Subscription selects tables and event types and names the topic they go to.
type Subscription struct {
	Name  string `json:"name" yaml:"name"`
	Topic string `json:"topic" yaml:"topic"`
	// Include and Exclude are regular expressions matched against the whole "db.table"
	// (anchored). A table is selected when it matches any Include (everything when
	// Include is empty) and no Exclude.
	Include []string `json:"include,omitempty" yaml:"include"`
	Exclude []string `json:"exclude,omitempty" yaml:"exclude"`
	// Events limits the event types: insert, update, delete, ddl. All when empty.
	Events []string `json:"events,omitempty" yaml:"events"`
	// PartitionBy is pk (default), table or database.
	PartitionBy string `json:"partition_by,omitempty" yaml:"partition_by"`
	// Format is the messages' format: json (default, BinLake's row message), or a format
	// other captures' consumers read (rowenc.FormatNames lists them; docs/design.md,
	// "Message formats").
	Format string `json:"format,omitempty" yaml:"format"`
	// FormatOptions are the format's options (debezium-json's schema, say); each format
	// refuses options it does not know.
	FormatOptions map[string]string `json:"format_options,omitempty" yaml:"format_options"`
}

var IDPattern = config.IDPattern

// RetiredKeys answers an inline source password with where it goes instead, as every
// role's config does (config.InlineSecret): an instance file is copied, committed and
// stored in the coordinator, where every client of it would read the password.
func (*Instance) RetiredKeys() map[string]string {
	return map[string]string{"source.password": config.InlineSecret("password")}
}

// Validate checks the definition and names every bad field: *config.FieldErrors, joined,
// which `instance add --check` and add turn into the file's line of the key.
func (in *Instance) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, config.Bad(field, format, args...)) }
	if !IDPattern.MatchString(in.ID) {
		bad("id", "%q: %s", in.ID, config.IDRule)
	}
	s := &in.Source
	switch _, port, err := net.SplitHostPort(s.Addr); {
	case strings.Contains(s.Addr, "@"):
		// A DSN or user:password@host pasted here: config.Bad shows it with the
		// password as ***, and says where each part goes.
		bad("source.addr", "%q: want host:port, without a user or password (they go in source.user and source.password_file or source.password_env)", s.Addr)
	case err != nil || port == "":
		bad("source.addr", "%q: want host:port", s.Addr)
	default:
		// A port out of range passed the check and failed only at the first connection
		// (an outside trial: 127.0.0.1:70000 was "valid").
		if err := config.CheckDial(s.Addr); err != nil {
			bad("source.addr", "%v", err)
		}
	}
	if s.User == "" {
		bad("source.user", "required")
	}
	switch s.Flavor {
	case FlavorMySQL, FlavorMariaDB:
	case "":
		s.Flavor = FlavorMySQL
	default:
		bad("source.flavor", "%q: want mysql or mariadb", s.Flavor)
	}
	if s.ServerID == 0 {
		bad("source.server_id", "required (a replica server id unique on the source)")
	}
	if s.PasswordEnv != "" && s.PasswordFile != "" {
		bad("source.password_file", "set source.password_env or source.password_file, not both")
	}
	errs = append(errs, s.TLS.CheckKeys("source.tls"))
	if in.Start != nil && in.Start.GTIDSet == "" && in.Start.File == "" {
		bad("start", "set file (and pos) or gtid_set, or leave start out")
	}
	switch in.OnTooLarge {
	case "", TooLargeStop, TooLargeSkip:
	default:
		bad("on_too_large", "%q: want stop or skip", in.OnTooLarge)
	}
	switch in.OnUnreadable {
	case "", UnreadableStop, UnreadableSkip:
	default:
		bad("on_unreadable", "%q: want stop or skip", in.OnUnreadable)
	}
	if in.Snapshot != nil {
		errs = append(errs, in.Snapshot.validate())
	}
	if len(in.Subscriptions) == 0 {
		bad("subscriptions", "at least one is required")
	}
	names := map[string]bool{}
	for i := range in.Subscriptions {
		sub := &in.Subscriptions[i]
		if _, err := compileSubscription(*sub); err != nil {
			errs = append(errs, within(fmt.Sprintf("subscriptions[%d]", i), err))
		}
		if names[sub.Name] {
			bad(fmt.Sprintf("subscriptions[%d].name", i), "%q: used twice", sub.Name)
		}
		names[sub.Name] = true
	}
	if in.asNew {
		errs = append(errs, in.CheckNew())
	}
	return errors.Join(errs...)
}

// CheckNew refuses what a new definition (add, set -f, add --check) asks for and would
// not get, although a stored one keeps running with it (ParseInstance does not ask it, so
// a wave never stops an instance it ran for it): tombstones under a table's or database's
// key, which the wave never sends (log compaction would remove the whole table's rows
// under such a key). Its errors name their keys, as Validate's do.
func (in *Instance) CheckNew() error {
	var errs []error
	for i, s := range in.Subscriptions {
		// The option as written: a problem elsewhere in the subscription (another option,
		// its topic) hid this one until it was fixed (an outside trial).
		by := s.PartitionBy
		if s.FormatOptions["tombstones"] != "true" || (by != rowenc.PartitionTable && by != rowenc.PartitionDatabase) {
			continue
		}
		errs = append(errs, config.Bad(fmt.Sprintf("subscriptions[%d].format_options.tombstones", i),
			"true with partition_by: %s: no tombstone would be sent (under log compaction one would remove every row of the %s's key); tombstones go with partition_by: pk",
			by, by))
	}
	return errors.Join(errs...)
}

// flatten lists the errors errors.Join put together, or err alone.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// within is err about a key below the key at prefix: a *config.FieldError's path is
// made whole ("subscriptions[0]" and "include[1]"); another error is prefixed.
func within(prefix string, err error) error {
	var errs []error
	for _, e := range flatten(err) {
		if fe, ok := e.(*config.FieldError); ok {
			errs = append(errs, config.Bad(prefix+"."+fe.Field, "%w", fe.Err))
		} else {
			errs = append(errs, config.Bad(prefix, "%w", e))
		}
	}
	return errors.Join(errs...)
}

// Marshal returns the stored form.
func (in *Instance) Marshal() ([]byte, error) { return json.Marshal(in) }

// ParseInstance decodes and validates a stored instance definition.
func ParseInstance(data []byte) (*Instance, error) {
	var in Instance
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("decode instance: %w", err)
	}
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("instance %q: %w", in.ID, err)
	}
	return &in, nil
}

// Position is a transaction boundary in a source's binlog: where a capture resumes. It is
// the value of "instances/<id>/offset".
type Position struct {
	File string `json:"file,omitempty" yaml:"file"`
	Pos  uint32 `json:"pos,omitempty" yaml:"pos"`
	// GTIDSet is the source's GTID set up to and including the boundary; preferred over
	// File/Pos when set.
	GTIDSet string `json:"gtid_set,omitempty" yaml:"gtid_set"`
	// TS is the binlog timestamp (Unix seconds) of the last committed transaction.
	TS int64 `json:"ts,omitempty" yaml:"-"`
	// Rows counts the rows published by the instance up to this position, and At is the
	// wall time (Unix milliseconds) of the commit: `instance show` derives rows/s from two
	// readings.
	Rows int64 `json:"rows,omitempty" yaml:"-"`
	At   int64 `json:"at,omitempty" yaml:"-"`
	// Snapshot is the progress of the instance's snapshot, when it has one; never
	// changed in place (a Position is copied into the items and the status).
	Snapshot *SnapshotProgress `json:"snapshot,omitempty" yaml:"-"`
	// XADone lists, separated by spaces, the XA transactions (their xids, as the binlog
	// writes them: X'hex',X'hex',n) whose XA COMMIT comes after this position although
	// their XA PREPARE is before it: their rows are published, and a capture resuming
	// here passes their XA COMMIT by. Only a position held before a prepared XA
	// transaction has any (wave/capture/xa.go).
	XADone string `json:"xa_done,omitempty" yaml:"-"`
}

func (p Position) String() string {
	if p.GTIDSet != "" && p.File == "" {
		return "gtid " + p.GTIDSet // a start by GTID alone
	}
	if p.GTIDSet != "" {
		return fmt.Sprintf("%s:%d gtid %s", p.File, p.Pos, p.GTIDSet)
	}
	return fmt.Sprintf("%s:%d", p.File, p.Pos)
}

// subscription is a compiled Subscription.
type subscription struct {
	Subscription
	include, exclude []*regexp.Regexp
	events           uint8 // bit set of eventBit; 0 = all
	format           rowenc.Format
}

func eventBit(typ string) uint8 {
	switch typ {
	case rowenc.TypeInsert:
		return 1
	case rowenc.TypeUpdate:
		return 2
	case rowenc.TypeDelete:
		return 4
	case rowenc.TypeDDL:
		return 8
	}
	return 0
}

// compileSubscription validates a subscription and compiles its patterns; its error
// names every problem at once (it stopped at the first: a format's hid the include
// pattern's until it was fixed, an outside trial).
func compileSubscription(s Subscription) (*subscription, error) {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, config.Bad(field, format, args...)) }
	if s.Name == "" {
		bad("name", "required")
	}
	if err := bus.CheckTopicName(s.Topic); err != nil {
		bad("topic", "%w: want 1-249 letters, digits, '.', '_' or '-', and not \".\" or \"..\"", err)
	}
	switch s.PartitionBy {
	case "":
		s.PartitionBy = rowenc.PartitionPK
	case rowenc.PartitionPK, rowenc.PartitionTable, rowenc.PartitionDatabase:
	default:
		bad("partition_by", "%q: want pk, table or database", s.PartitionBy)
	}
	if s.Format == "" {
		s.Format = rowenc.FormatJSON
	}
	format, err := rowenc.NewFormat(s.Format, s.FormatOptions)
	if err != nil {
		// Each option refused at its own key; anything else (an unknown format) at format.
		var rest []error
		for _, e := range flatten(err) {
			var oe *rowenc.OptionError
			if errors.As(e, &oe) {
				bad("format_options."+oe.Option, "%w", oe.Err)
			} else {
				rest = append(rest, e)
			}
		}
		if len(rest) > 0 {
			bad("format", "%w", errors.Join(rest...))
		}
	}
	c := &subscription{Subscription: s, format: format}
	compile := func(field string, pats []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for i, p := range pats {
			if p == "" {
				bad(fmt.Sprintf("%s[%d]", field, i), "empty pattern")
				continue
			}
			// The pattern alone first: its error quotes the pattern as written, not the
			// anchored one ("missing closing ]: `[abc)$`").
			_, err := regexp.Compile(p)
			var re *regexp.Regexp
			if err == nil {
				re, err = regexp.Compile(`^(?:` + p + `)$`)
			}
			if err != nil {
				bad(fmt.Sprintf("%s[%d]", field, i), "%q: %w", p, err)
				continue
			}
			out = append(out, re)
		}
		return out
	}
	c.include = compile("include", s.Include)
	c.exclude = compile("exclude", s.Exclude)
	for i, e := range s.Events {
		b := eventBit(e)
		if b == 0 {
			bad(fmt.Sprintf("events[%d]", i), "%q: want insert, update, delete or ddl", e)
		}
		c.events |= b
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Filter routes a table's events to subscriptions.
type Filter struct {
	subs []*subscription
}

// NewFilter compiles the subscriptions of an instance.
func NewFilter(subs []Subscription) (*Filter, error) {
	f := &Filter{}
	for i, s := range subs {
		c, err := compileSubscription(s)
		if err != nil {
			return nil, fmt.Errorf("subscriptions[%d]: %w", i, err)
		}
		f.subs = append(f.subs, c)
	}
	return f, nil
}

// Tables returns, for "db.table", the indexes of the subscriptions that select it
// regardless of event type; the result is cached per table by the caller.
func (f *Filter) Tables(db, table string) []int {
	name := db + "." + table
	var out []int
	for i, s := range f.subs {
		if s.matchTable(name) {
			out = append(out, i)
		}
	}
	return out
}

// Match returns the subscriptions that want event type typ of "db.table".
func (f *Filter) Match(db, table, typ string) []int {
	var out []int
	for _, i := range f.Tables(db, table) {
		if f.subs[i].wants(typ) {
			out = append(out, i)
		}
	}
	return out
}

// Subscription returns the i-th subscription (with defaults applied).
func (f *Filter) Subscription(i int) Subscription { return f.subs[i].Subscription }

// Format returns the i-th subscription's message format.
func (f *Filter) Format(i int) rowenc.Format { return f.subs[i].format }

// Topics lists the distinct topics, sorted.
func (f *Filter) Topics() []string {
	var out []string
	for _, s := range f.subs {
		if !slices.Contains(out, s.Topic) {
			out = append(out, s.Topic)
		}
	}
	slices.Sort(out)
	return out
}

func (s *subscription) matchTable(name string) bool {
	ok := len(s.include) == 0
	for _, re := range s.include {
		if re.MatchString(name) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	for _, re := range s.exclude {
		if re.MatchString(name) {
			return false
		}
	}
	return true
}

// wants reports whether the subscription takes events of type typ; snapshot rows go
// where inserts go (a snapshot row is the insert of a row that predates the capture).
func (s *subscription) wants(typ string) bool {
	if typ == rowenc.TypeSnapshot {
		typ = rowenc.TypeInsert
	}
	return s.events == 0 || s.events&eventBit(typ) != 0
}

// ParseSubscriptionFlag parses the compact command-line form of a subscription,
// "name=topic:include[,include…][;exclude=…][;events=insert,update][;partition_by=pk][;format=json]",
// for `binlake instance add --sub`. Include patterns are separated by commas, so a
// pattern cannot itself contain one.
func ParseSubscriptionFlag(s string) (Subscription, error) {
	var sub Subscription
	parts := strings.Split(s, ";")
	name, rest, ok := strings.Cut(parts[0], "=")
	if !ok || name == "" {
		return sub, fmt.Errorf("subscription %q: want name=topic:include[,include…][;exclude=…][;events=…][;partition_by=…][;format=…]", s)
	}
	sub.Name = name
	topic, incl, _ := strings.Cut(rest, ":")
	sub.Topic = topic
	if incl != "" {
		sub.Include = strings.Split(incl, ",")
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" {
			return sub, fmt.Errorf("subscription %q: option %q: want key=value", s, p)
		}
		switch k {
		case "exclude":
			sub.Exclude = append(sub.Exclude, strings.Split(v, ",")...)
		case "events":
			sub.Events = append(sub.Events, strings.Split(v, ",")...)
		case "partition_by":
			sub.PartitionBy = v
		case "format":
			sub.Format = v
		default:
			return sub, fmt.Errorf("subscription %q: unknown option %q (want exclude, events, partition_by or format)", s, k)
		}
	}
	if _, err := compileSubscription(sub); err != nil {
		return sub, fmt.Errorf("subscription %q: %w", s, err)
	}
	return sub, nil
}
