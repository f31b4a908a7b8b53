package wave

import (
	"net/url"
	"time"

	"github.com/binlake/binlake/internal/config"
)

// BalancerConfig is the balancer section of wave.yaml (see deploy/wave.example.yaml).
type BalancerConfig struct {
	// Enabled: this wave takes part in the balancer election (true).
	Enabled bool `yaml:"enabled"`
	// Judge is the judge's base URL, which plans with what each instance costs. Empty:
	// a dead wave's instances go to the waves with the fewest, and nothing rebalances.
	Judge string `yaml:"judge"`
	// JudgeTokenFile holds the judge's token when it has one (or BINLAKE_JUDGE_TOKEN).
	JudgeTokenFile string `yaml:"judge_token_file"`
	// JudgeCAFile holds the CA of the judge's certificate when its https URL uses one the
	// system does not trust.
	JudgeCAFile   string          `yaml:"judge_ca_file"`
	Auto          bool            `yaml:"auto"`
	AutoAfter     config.Duration `yaml:"auto_after"`
	Interval      config.Duration `yaml:"interval"`
	InFlight      int             `yaml:"in_flight"`
	LagBound      config.Duration `yaml:"lag_bound"`
	SettleTimeout config.Duration `yaml:"settle_timeout"`
	FailoverGrace config.Duration `yaml:"failover_grace"`
}

// DefaultBalancerConfig is the balancer section's defaults.
func DefaultBalancerConfig() BalancerConfig {
	return BalancerConfig{Enabled: true, AutoAfter: config.Duration(5 * time.Minute), Interval: config.Duration(30 * time.Second),
		InFlight: 1, LagBound: config.Duration(10 * time.Second), SettleTimeout: config.Duration(2 * time.Minute),
		FailoverGrace: config.Duration(5 * time.Second)}
}

// Validate names the first bad key.
func (b *BalancerConfig) Validate() error {
	if b.Judge != "" {
		u, err := url.Parse(b.Judge)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return config.Bad("balancer.judge", "%q: want the judge's base URL, such as http://judge:8090", b.Judge)
		}
	}
	if b.JudgeCAFile != "" {
		if _, _, err := config.LoadCAPool(b.JudgeCAFile); err != nil {
			return config.Bad("balancer.judge_ca_file", "%w", err)
		}
	}
	if b.InFlight < 1 {
		return config.Bad("balancer.in_flight", "%d: must be at least 1", b.InFlight)
	}
	for _, f := range []struct {
		name string
		v    config.Duration
	}{{"auto_after", b.AutoAfter}, {"interval", b.Interval}, {"lag_bound", b.LagBound}, {"settle_timeout", b.SettleTimeout}} {
		if f.v <= 0 {
			return config.Bad("balancer."+f.name, "%s: must be positive", f.v)
		}
	}
	if b.FailoverGrace < 0 {
		return config.Bad("balancer.failover_grace", "%s: must not be negative", b.FailoverGrace)
	}
	return nil
}

// Options returns the section as BalancerOptions, without the planner (the caller
// builds the judge's client from Judge).
func (b *BalancerConfig) Options() BalancerOptions {
	grace := b.FailoverGrace.D()
	if grace == 0 {
		grace = -1 // asked for none; BalancerOptions' zero is the default
	}
	return BalancerOptions{Disabled: !b.Enabled, Auto: b.Auto, AutoAfter: b.AutoAfter.D(), Interval: b.Interval.D(),
		InFlight: b.InFlight, LagBound: b.LagBound.D(), SettleTimeout: b.SettleTimeout.D(), FailoverGrace: grace}
}
