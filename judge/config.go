package judge

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/remotewrite"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/lbplugins"
)

// Environment variables that override secrets in judge.yaml.
const (
	TokenEnv           = config.JudgeTokenEnv
	ElasticPasswordEnv = "BINLAKE_JUDGE_ES_PASSWORD"
	ElasticAPIKeyEnv   = "BINLAKE_JUDGE_ES_API_KEY"
)

// DefaultGroupPrefix, followed by the judge's node name, is its default consumer group.
const DefaultGroupPrefix = "binlake-judge-"

// Bus and store kinds.
const (
	BusKafka      = config.BusKafka
	BusNone       = config.BusNone // HTTP ingest only
	StoreSQLite   = "sqlite"
	StoreElastic  = "elastic"
	defaultListen = config.JudgeListen
)

// Config is judge.yaml (deploy/judge.example.yaml documents every field).
type Config struct {
	// Node names this judge, stably across restarts; the host name when empty.
	Node string      `yaml:"node"`
	Log  config.Log  `yaml:"log"`
	HTTP config.HTTP `yaml:"http"`
	// Bus.Group is the consumer group; empty means binlake-judge-<node>: every judge has
	// a group of its own, and so sees every node's batches, and keeps it across
	// restarts, so that a restarted judge resumes where it stopped. A new group starts
	// at the oldest retained batch unless Bus.Start says newest.
	Bus   config.Bus `yaml:"bus"`
	Store struct {
		Kind   string `yaml:"kind"`
		SQLite struct {
			Path string `yaml:"path"`
		} `yaml:"sqlite"`
		Elastic struct {
			Addresses []string `yaml:"addresses"`
			// TLS, for https addresses: the CAs that signed the engine's certificate
			// (the system's when empty), a client certificate, the server name.
			TLS *config.ClientTLS `yaml:"tls"`
			// Basic auth: Username with the password from PasswordEnv (default
			// BINLAKE_JUDGE_ES_PASSWORD) or PasswordFile.
			Username     string `yaml:"username"`
			PasswordFile string `yaml:"password_file"`
			PasswordEnv  string `yaml:"password_env"`
			// Or an API key (instead of basic auth): its "encoded" value or
			// "<id>:<api_key>", from APIKeyEnv (default BINLAKE_JUDGE_ES_API_KEY) or
			// APIKeyFile.
			APIKeyFile string `yaml:"api_key_file"`
			APIKeyEnv  string `yaml:"api_key_env"`
			Prefix     string `yaml:"prefix"`
			Replicas   int    `yaml:"replicas"`
			// RefreshInterval is how soon a written point becomes searchable; the
			// store's default when zero.
			RefreshInterval config.Duration `yaml:"refresh_interval"`
		} `yaml:"elastic"`
		Retention config.Duration `yaml:"retention"`
		Buffer    BufferConfig    `yaml:"buffer"`
	} `yaml:"store"`
	Analysis struct {
		EWMAAlpha         float64         `yaml:"ewma_alpha"`
		HistoricalEvery   config.Duration `yaml:"historical_every"`
		HistoricalMetrics []string        `yaml:"historical_metrics"`
	} `yaml:"analysis"`
	Placement struct {
		Algorithm       string                        `yaml:"algorithm"`
		StaleIntervals  float64                       `yaml:"stale_intervals"`
		DefaultInterval config.Duration               `yaml:"default_interval"`
		Thresholds      map[string]float64            `yaml:"thresholds"`
		Plugins         map[string]lbplugins.Settings `yaml:"plugins"`
		SnapshotEvery   config.Duration               `yaml:"snapshot_every"`
		CapacityEvery   config.Duration               `yaml:"capacity_every"`
		ReservationTTL  config.Duration               `yaml:"reservation_ttl"`
	} `yaml:"placement"`
	// Rebalance holds the goals GET and POST /v1/rebalance plan for and what an idle
	// instance costs.
	Rebalance RebalanceConfig `yaml:"rebalance"`
	// RemoteWrite configures POST /api/v1/write, where a Prometheus that scrapes
	// node_exporter on the hosts feeds the judge (Prometheus remote write 1.0).
	RemoteWrite RemoteWriteConfig `yaml:"remote_write"`
	// Status configures the status page (/).
	Status struct {
		// AlarmURL is the alarm's base URL (http://alarm:8092): the page lists its firing
		// alerts and links to it. Empty: the page says no alarm is connected.
		AlarmURL string `yaml:"alarm_url"`
		// TLS, for an https alarm_url: the CA of the alarm's certificate when the
		// system does not trust it.
		TLS *config.ClientTLS `yaml:"tls"`
	} `yaml:"status"`
}

// RemoteWriteConfig is the remote_write section.
type RemoteWriteConfig struct {
	// NodeLabel names the label that holds a series' node, without its port
	// ("wave-1:9100" → "wave-1"); default instance. A `node` label wins when present.
	NodeLabel string `yaml:"node_label"`
	// Unmapped is what becomes of series that map to no canonical metric: drop
	// (default) or keep (stored under their own name and labels). Counted either way.
	Unmapped string `yaml:"unmapped"`
}

// Options are the Mapper's options.
func (c RemoteWriteConfig) Options() remotewrite.MapOptions {
	return remotewrite.MapOptions{NodeLabel: c.NodeLabel, KeepUnmapped: c.Unmapped == "keep"}
}

func (c *RemoteWriteConfig) validate() error {
	var errs []error
	if c.NodeLabel == "" {
		c.NodeLabel = "instance"
	}
	if !metric.ValidLabelKey(c.NodeLabel) {
		errs = append(errs, config.Bad("remote_write.node_label", "%q: want a label name", c.NodeLabel))
	}
	switch c.Unmapped {
	case "":
		c.Unmapped = "drop"
	case "drop", "keep":
	default:
		errs = append(errs, config.Bad("remote_write.unmapped", "%q: want drop or keep", c.Unmapped))
	}
	return errors.Join(errs...)
}

// RenamedKeys are the keys of older judge.yaml files, now the same as every role's.
func (*Config) RenamedKeys() map[string]string {
	return map[string]string{"store.elastic.ca_file": "store.elastic.tls.ca_file", "status.alarm_ca_file": "status.tls.ca_file"}
}

// RetiredKeys are the inline secrets older judge.yaml files could hold.
func (*Config) RetiredKeys() map[string]string {
	return map[string]string{"http.token": config.InlineSecret("token"),
		"store.elastic.password": config.InlineSecret("password"), "store.elastic.api_key": config.InlineSecret("api_key"),
		"bus.sasl.password": config.InlineSecret("password")}
}

// RebalanceConfig is the rebalance section. Band, InstanceFloor and Cooldown are
// pointers because 0 is a meaningful setting for each (no band, idle instances cost
// nothing, no cooldown) that must not be taken for "unset"; Validate fills every unset
// field with DefaultRebalanceOptions' value.
type RebalanceConfig struct {
	// MaxUtilisation is the peak utilisation (a share of the host's cores) no wave
	// should exceed; 0 disables the goal.
	MaxUtilisation *float64 `yaml:"max_utilisation"`
	// UtilisationBand is the spread of peak utilisations the plans aim within;
	// UtilisationBalance the ratio of every wave's lines to the fleet's level (0: 1.08).
	UtilisationBand    *float64 `yaml:"utilisation_band"`
	UtilisationBalance *float64 `yaml:"utilisation_balance"`
	// FitWindow is how far back each wave's prices are fitted.
	FitWindow *config.Duration `yaml:"fit_window"`
	// HardMax is the load in rows/s no wave should exceed in the rows model (the
	// fallback when a wave reports no cores or CPU); 0 disables the goal.
	HardMax float64 `yaml:"hard_max"`
	// Band is the spread (most minus least loaded wave) the plans aim within.
	Band *float64 `yaml:"band"`
	// InstanceFloor is what an idle instance costs, in rows/s.
	InstanceFloor *float64 `yaml:"instance_floor"`
	// MaxMoves bounds a plan; 0 means the default.
	MaxMoves int `yaml:"max_moves"`
	// Cooldown keeps an instance that moved recently where it is.
	Cooldown *config.Duration `yaml:"cooldown"`
}

// validate fills the defaults and checks the values.
func (r *RebalanceConfig) validate() error {
	d := DefaultRebalanceOptions()
	if r.MaxUtilisation == nil {
		r.MaxUtilisation = &d.MaxUtilisation
	}
	if r.UtilisationBand == nil {
		r.UtilisationBand = &d.UtilisationBand
	}
	if r.UtilisationBalance == nil {
		r.UtilisationBalance = &d.UtilisationBalance
	}
	if r.FitWindow == nil {
		fw := config.Duration(d.FitWindow)
		r.FitWindow = &fw
	}
	if r.Band == nil {
		r.Band = &d.Band
	}
	if r.InstanceFloor == nil {
		r.InstanceFloor = &d.InstanceFloor
	}
	if r.MaxMoves == 0 {
		r.MaxMoves = d.MaxMoves
	}
	if r.Cooldown == nil {
		cd := config.Duration(d.Cooldown)
		r.Cooldown = &cd
	}
	return r.Options().validate()
}

// Options returns the rebalance options of the section (defaults for unset fields).
func (r RebalanceConfig) Options() RebalanceOptions {
	o := DefaultRebalanceOptions()
	o.HardMax = r.HardMax
	if r.MaxUtilisation != nil {
		o.MaxUtilisation = *r.MaxUtilisation
	}
	if r.UtilisationBand != nil {
		o.UtilisationBand = *r.UtilisationBand
	}
	if r.UtilisationBalance != nil {
		o.UtilisationBalance = *r.UtilisationBalance
	}
	if r.FitWindow != nil {
		o.FitWindow = r.FitWindow.D()
	}
	if r.Band != nil {
		o.Band = *r.Band
	}
	if r.InstanceFloor != nil {
		o.InstanceFloor = *r.InstanceFloor
	}
	if r.MaxMoves != 0 {
		o.MaxMoves = r.MaxMoves
	}
	if r.Cooldown != nil {
		o.Cooldown = r.Cooldown.D()
	}
	return o
}

// BufferConfig is store.buffer: the bounded buffer between ingest and the store. Zero
// values take store.BufferOptions' defaults.
type BufferConfig struct {
	// Capacity in points. A full buffer holds the bus back (its batches are committed
	// only once stored) and answers HTTP batches as HTTPOverflow says.
	Capacity int `yaml:"capacity"`
	// HTTPOverflow is what happens to a batch posted over HTTP that finds the buffer
	// full: "reject" (the default) answers 503 and the agent sends it again later;
	// "drop" accepts it and drops the oldest HTTP points, counted.
	HTTPOverflow string `yaml:"http_overflow"`
	// Batch is the most points written to the store at once.
	Batch int `yaml:"batch"`
	// MinBackoff and MaxBackoff bound the exponential wait between failed writes.
	MinBackoff config.Duration `yaml:"min_backoff"`
	MaxBackoff config.Duration `yaml:"max_backoff"`
	// WriteTimeout bounds one write to the store.
	WriteTimeout config.Duration `yaml:"write_timeout"`
	// CloseTimeout bounds how long a stopping judge keeps writing what is buffered.
	CloseTimeout config.Duration `yaml:"close_timeout"`
}

// Defaults of store.BufferOptions, repeated here only to check max_backoff against the
// effective min_backoff.
const defaultMinBackoff = 100 * time.Millisecond

// HTTPOverflow values.
const (
	OverflowReject = "reject"
	OverflowDrop   = "drop"
)

func (b *BufferConfig) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad("store.buffer."+field, format, args...))
	}
	switch b.HTTPOverflow {
	case "":
		b.HTTPOverflow = OverflowReject
	case OverflowReject, OverflowDrop:
	default:
		bad("http_overflow", "%q: want %s or %s", b.HTTPOverflow, OverflowReject, OverflowDrop)
	}
	for _, f := range []struct {
		key      string
		v        any
		negative bool
	}{{"capacity", b.Capacity, b.Capacity < 0}, {"batch", b.Batch, b.Batch < 0},
		{"min_backoff", b.MinBackoff, b.MinBackoff < 0}, {"max_backoff", b.MaxBackoff, b.MaxBackoff < 0},
		{"write_timeout", b.WriteTimeout, b.WriteTimeout < 0}, {"close_timeout", b.CloseTimeout, b.CloseTimeout < 0}} {
		if f.negative {
			bad(f.key, "%v: want 0 or more (0 takes the default)", f.v)
		}
	}
	// Against min_backoff only when both are valid: one refused above says nothing here.
	if b.MaxBackoff > 0 && b.MinBackoff >= 0 {
		lo := b.MinBackoff.D()
		if lo == 0 {
			lo = defaultMinBackoff
		}
		if b.MaxBackoff.D() < lo {
			bad("max_backoff", "%s: want at least min_backoff, %s", b.MaxBackoff, config.Duration(lo))
		}
	}
	return errors.Join(errs...)
}

// Options returns the store buffer's options.
func (b BufferConfig) Options() store.BufferOptions {
	overflow := store.OverflowReject
	if b.HTTPOverflow == OverflowDrop {
		overflow = store.OverflowDrop
	}
	return store.BufferOptions{
		Capacity: b.Capacity, MaxBatch: b.Batch, Overflow: overflow,
		MinBackoff: b.MinBackoff.D(), MaxBackoff: b.MaxBackoff.D(),
		WriteTimeout: b.WriteTimeout.D(), CloseTimeout: b.CloseTimeout.D(),
	}
}

// Load reads, defaults and validates judge.yaml.
func Load(path string) (Config, error) {
	var c Config
	if err := config.Load(path, &c); err != nil {
		return c, err
	}
	return c, nil
}

// Validate fills the defaults and checks the values; config.Load calls it. Every
// problem is reported, joined, each naming its key (config.Locate puts them in the
// file's order); a value that can only be checked against another (the Elasticsearch
// keys against a store kind it refuses, say) is left until that one is right.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad(field, format, args...))
	}
	errs = append(errs, c.Log.Validate(), c.HTTP.Validate(defaultListen, TokenEnv), c.RemoteWrite.validate())
	alarmURLOK := true
	if u := c.Status.AlarmURL; u != "" {
		pu, err := url.Parse(u)
		switch {
		case config.URLHasCredentials(u):
			bad("status.alarm_url", "credentials in the URL are refused (they would reach the logs); the alarm's reads need none")
			alarmURLOK = false
		case config.BaseURLProblem(u) != "":
			bad("status.alarm_url", "%q has %s", u, config.BaseURLProblem(u))
			alarmURLOK = false
		case err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "":
			bad("status.alarm_url", "%q: want the alarm's base URL, such as http://alarm:8092", u)
			alarmURLOK = false
		}
	}
	if alarmURLOK {
		errs = append(errs, c.Status.TLS.CheckHTTPS("status.tls", strings.HasPrefix(c.Status.AlarmURL, "https://")))
	} else {
		// Whether the URL is https is not known yet: the block's keys and files are.
		errs = append(errs, c.Status.TLS.Check("status.tls"))
	}
	nodeOK := true
	if c.Node == "" {
		c.Node, _ = os.Hostname()
		if c.Node == "" {
			bad("node", "empty, and the host name is unknown: set it")
			nodeOK = false
		}
	}
	group := ""
	if nodeOK {
		group = DefaultGroupPrefix + c.Node
	}
	errs = append(errs, c.Bus.Validate(group, config.StartOldest))
	switch c.Store.Kind {
	case "":
		c.Store.Kind = StoreSQLite
		fallthrough
	case StoreSQLite:
		if c.Store.SQLite.Path == "" {
			c.Store.SQLite.Path = "./data/judge.db"
		}
		if err := config.CheckStorePath(c.Store.SQLite.Path); err != nil {
			bad("store.sqlite.path", "%w", err)
		}
	case StoreElastic:
		if c.Store.Elastic.RefreshInterval < 0 {
			bad("store.elastic.refresh_interval", "%s: want 0 or more", c.Store.Elastic.RefreshInterval)
		}
		if c.Store.Elastic.Replicas < 0 {
			bad("store.elastic.replicas", "%d: want 0 or more", c.Store.Elastic.Replicas)
		}
		errs = append(errs, c.validateElastic())
	default:
		bad("store.kind", "%q: want sqlite or elastic", c.Store.Kind)
	}
	if c.Store.Retention < 0 {
		bad("store.retention", "%s: want 0 or more", c.Store.Retention)
	}
	errs = append(errs, c.Store.Buffer.validate())
	if c.Analysis.EWMAAlpha != 0 && !(c.Analysis.EWMAAlpha > 0 && c.Analysis.EWMAAlpha <= 1) {
		bad("analysis.ewma_alpha", "%v: want 0 < alpha ≤ 1 (0 or none: 0.2)", c.Analysis.EWMAAlpha)
	}
	switch he := c.Analysis.HistoricalEvery; {
	case he < 0:
		bad("analysis.historical_every", "%s: want 0 or more", he)
	case he != 0 && he.D() < time.Second:
		bad("analysis.historical_every", "%s: want at least 1s", he)
	}
	for i, m := range c.Analysis.HistoricalMetrics {
		if !metric.ValidName(m) {
			bad(fmt.Sprintf("analysis.historical_metrics[%d]", i), "%q is not a metric name", m)
		}
	}
	errs = append(errs, c.validatePlacement(), c.Rebalance.validate())
	return errors.Join(errs...)
}

// validatePlacement fills the placement section's defaults and checks it, every
// problem joined.
func (c *Config) validatePlacement() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad("placement."+field, format, args...))
	}
	p := &c.Placement
	if p.Algorithm == "" {
		p.Algorithm = DefaultAlgorithm
	}
	if _, err := lbplugins.Lookup(p.Algorithm); err != nil {
		bad("algorithm", "%w", err)
	}
	if p.StaleIntervals < 0 {
		bad("stale_intervals", "%v: want 0 or more", p.StaleIntervals)
	}
	if p.DefaultInterval < 0 {
		bad("default_interval", "%s: want 0 or more", p.DefaultInterval)
	}
	if p.SnapshotEvery < 0 || p.SnapshotEvery.D() > time.Minute {
		bad("snapshot_every", "%s: want at most 1m (%s when unset)", p.SnapshotEvery, config.Duration(DefaultSnapshotEvery))
	}
	if p.SnapshotEvery == 0 {
		p.SnapshotEvery = config.Duration(DefaultSnapshotEvery)
	}
	if p.CapacityEvery < 0 || p.CapacityEvery.D() > 5*time.Minute {
		bad("capacity_every", "%s: want at most 5m (%s when unset)", p.CapacityEvery, config.Duration(DefaultCapacityEvery))
	}
	if p.CapacityEvery == 0 {
		p.CapacityEvery = config.Duration(DefaultCapacityEvery)
	}
	if p.ReservationTTL == 0 {
		p.ReservationTTL = config.Duration(DefaultReservationTTL)
	}
	if p.ReservationTTL.D() < time.Second {
		bad("reservation_ttl", "%s: want at least 1s", p.ReservationTTL)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Thresholds)) {
		if !metric.ValidName(name) {
			bad("thresholds."+name, "%q is not a metric name", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Plugins)) {
		if _, err := lbplugins.New(name, p.Plugins[name]); err != nil {
			bad("plugins."+name, "%w", err)
		}
	}
	return errors.Join(errs...)
}

// Filters returns the common placement filters of the config.
func (c *Config) Filters() lbplugins.Filters {
	return lbplugins.Filters{
		StaleIntervals:  c.Placement.StaleIntervals,
		DefaultInterval: c.Placement.DefaultInterval.D(),
		Thresholds:      c.Placement.Thresholds,
	}
}

// validateElastic checks store.elastic's addresses, TLS block and credentials' keys (the
// files read unless their variable is set), filling the variables' defaults; every
// problem joined.
func (c *Config) validateElastic() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad("store.elastic."+field, format, args...))
	}
	e := &c.Store.Elastic
	if len(e.Addresses) == 0 {
		bad("addresses", "required: at least one URL, e.g. http://127.0.0.1:9200")
	}
	https, addrsOK := false, len(e.Addresses) > 0
	for i, a := range e.Addresses {
		u, err := url.Parse(a)
		switch {
		case config.URLHasCredentials(a): // first: a malformed URL may hold a password too
			bad(fmt.Sprintf("addresses[%d]", i), "%s: use username and password_file, or api_key_file", config.URLCredentialsRefused)
			addrsOK = false
		case config.BaseURLProblem(a) != "":
			bad(fmt.Sprintf("addresses[%d]", i), "%q has %s", a, config.BaseURLProblem(a))
			addrsOK = false
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad(fmt.Sprintf("addresses[%d]", i), "%q: want http://host:port or https://host:port", a)
			addrsOK = false
		default:
			https = https || u.Scheme == "https"
		}
	}
	if addrsOK {
		errs = append(errs, e.TLS.CheckHTTPS("store.elastic.tls", https))
	} else {
		// Whether an address is https is not known yet: the block's keys and files are.
		errs = append(errs, e.TLS.Check("store.elastic.tls"))
	}
	if e.Username == "" && e.PasswordFile != "" {
		bad("username", "required with password_file")
	}
	if e.Username != "" && e.APIKeyFile != "" {
		bad("username", "set username (basic auth) or api_key_file, not both")
	}
	if e.PasswordEnv == "" {
		e.PasswordEnv = ElasticPasswordEnv
	}
	if e.APIKeyEnv == "" {
		e.APIKeyEnv = ElasticAPIKeyEnv
	}
	errs = append(errs, c.elasticPassword().Check("store.elastic.password"), c.elasticAPIKey().Check("store.elastic.api_key"))
	return errors.Join(errs...)
}

func (c *Config) elasticPassword() config.SecretRef {
	return config.SecretRef{File: c.Store.Elastic.PasswordFile, Env: c.Store.Elastic.PasswordEnv}
}

func (c *Config) elasticAPIKey() config.SecretRef {
	return config.SecretRef{File: c.Store.Elastic.APIKeyFile, Env: c.Store.Elastic.APIKeyEnv}
}

// ElasticCredentials resolves store.elastic's password and API key, each from its
// variable first, then its file. A username without any password is an error; so are
// both kinds at once. The errors name the key and the file, never a secret.
func (c *Config) ElasticCredentials() (password, apiKey config.Secret, err error) {
	e := c.Store.Elastic
	if password, err = c.elasticPassword().Resolve(); err != nil {
		return "", "", config.Bad("store.elastic.password_file", "%w", err)
	}
	if apiKey, err = c.elasticAPIKey().Resolve(); err != nil {
		return "", "", config.Bad("store.elastic.api_key_file", "%w", err)
	}
	switch {
	case e.Username != "" && password == "":
		return "", "", config.Bad("store.elastic.username", "%q: no password: set password_file or $%s", e.Username, e.PasswordEnv)
	case e.Username != "" && apiKey != "":
		return "", "", config.Bad("store.elastic.username", "username and an API key ($%s) both set: use one", e.APIKeyEnv)
	case e.Username == "" && password != "":
		return "", "", config.Bad("store.elastic.username", "required: a password ($%s) is set", e.PasswordEnv)
	}
	return password, apiKey, nil
}
