package wave

import (
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/balancer"
)

// BalancerConfig is the balancer section of wave.yaml (see deploy/wave.example.yaml).
type BalancerConfig struct {
	// Enabled: this wave takes part in the balancer election (true).
	Enabled bool `yaml:"enabled"`
	// Judge is the judge's base URL, which plans with what each instance costs. Empty:
	// a dead wave's instances go to the waves with the fewest, and nothing rebalances.
	Judge string `yaml:"judge"`
	// The judge's token, when it has one: from the variable JudgeTokenEnv names
	// (default BINLAKE_JUDGE_TOKEN, the judge's own) or the file JudgeTokenFile names.
	JudgeTokenFile string `yaml:"judge_token_file"`
	JudgeTokenEnv  string `yaml:"judge_token_env"`
	// TLS, for an https judge URL: the client's block, e.g. the CA of the judge's
	// certificate when the system does not trust it.
	TLS           *config.ClientTLS `yaml:"tls"`
	Auto          bool              `yaml:"auto"`
	AutoAfter     config.Duration   `yaml:"auto_after"`
	Interval      config.Duration   `yaml:"interval"`
	InFlight      int               `yaml:"in_flight"`
	LagBound      config.Duration   `yaml:"lag_bound"`
	SettleTimeout config.Duration   `yaml:"settle_timeout"`
	FailoverGrace config.Duration   `yaml:"failover_grace"`
}

// DefaultBalancerConfig is the balancer section's defaults.
func DefaultBalancerConfig() BalancerConfig {
	return BalancerConfig{Enabled: true, AutoAfter: config.Duration(5 * time.Minute), Interval: config.Duration(30 * time.Second),
		InFlight: 1, LagBound: config.Duration(10 * time.Second), SettleTimeout: config.Duration(2 * time.Minute),
		FailoverGrace: config.Duration(5 * time.Second)}
}

// Validate names every bad key, joined.
func (b *BalancerConfig) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, config.Bad("balancer."+field, format, args...))
	}
	judgeOK := true
	if b.Judge != "" {
		u, err := url.Parse(b.Judge)
		switch {
		case config.URLHasCredentials(b.Judge):
			// As the agent's sink.http.url and the judge's status.alarm_url: the URL
			// is logged at start ("wave starting … judge=").
			bad("judge", "%s: use judge_token_file or judge_token_env", config.URLCredentialsRefused)
			judgeOK = false
		case config.BaseURLProblem(b.Judge) != "":
			bad("judge", "%q has %s", b.Judge, config.BaseURLProblem(b.Judge))
			judgeOK = false
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad("judge", "%q: want the judge's base URL, such as http://judge:8090", b.Judge)
			judgeOK = false
		}
	}
	if judgeOK {
		errs = append(errs, b.TLS.CheckHTTPS("balancer.tls", strings.HasPrefix(b.Judge, "https://")))
	} else {
		// Whether the URL is https is not known yet: the block's keys and files are.
		errs = append(errs, b.TLS.Check("balancer.tls"))
	}
	if b.JudgeTokenEnv == "" {
		b.JudgeTokenEnv = config.JudgeTokenEnv
	}
	if b.Judge != "" {
		errs = append(errs, b.JudgeToken().Check("balancer.judge_token"))
	}
	if b.InFlight < 1 {
		bad("in_flight", "%d: want at least 1", b.InFlight)
	}
	for _, f := range []struct {
		name string
		v    config.Duration
	}{{"auto_after", b.AutoAfter}, {"interval", b.Interval}, {"lag_bound", b.LagBound}, {"settle_timeout", b.SettleTimeout}} {
		if f.v <= 0 {
			bad(f.name, "%s: want more than 0", f.v)
		}
	}
	if b.FailoverGrace < 0 {
		bad("failover_grace", "%s: want 0 or more", b.FailoverGrace)
	}
	return errors.Join(errs...)
}

// JudgeToken is where the judge's token is read.
func (b *BalancerConfig) JudgeToken() config.SecretRef {
	return config.SecretRef{File: b.JudgeTokenFile, Env: b.JudgeTokenEnv}
}

// Options returns the section as balancer.Options, without the planner (the caller
// builds the judge's client from Judge).
func (b *BalancerConfig) Options() balancer.Options {
	grace := b.FailoverGrace.D()
	if grace == 0 {
		grace = -1 // asked for none; balancer.Options' zero is the default
	}
	return balancer.Options{Disabled: !b.Enabled, Auto: b.Auto, AutoAfter: b.AutoAfter.D(), Interval: b.Interval.D(),
		InFlight: b.InFlight, LagBound: b.LagBound.D(), SettleTimeout: b.SettleTimeout.D(), FailoverGrace: grace}
}
