package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// alphaConfig has what a plugin's config may hold: scalars, a Duration, lists, nested
// structs, lists of structs, a map of structs and a field the yaml package ignores.
type alphaConfig struct {
	Name   string   `yaml:"name"`
	Every  Duration `yaml:"every"`
	Tags   []string `yaml:"tags"`
	Limits struct {
		Max int `yaml:"max"`
	} `yaml:"limits"`
	Targets []struct {
		Addr string `yaml:"addr"`
	} `yaml:"targets"`
	Routes map[string]struct {
		To string `yaml:"to"`
	} `yaml:"routes"`
	hidden string
}

// Validate refuses two names: one error names its key, the other the whole plugin.
func (c *alphaConfig) Validate() error {
	switch c.Name {
	case "bad":
		return errors.New(`name "bad": want another`)
	case "whole":
		return errors.New("the whole plugin is wrong")
	}
	if strings.Contains(c.Name, "@") { // quoted as it is, as a plugin may
		return fmt.Errorf("name %q: want no '@'", c.Name)
	}
	return nil
}

type betaConfig struct {
	Level int `yaml:"level"`
}

type testRegistry struct{}

func (testRegistry) Names() []string { return []string{"alpha", "beta"} }

func (testRegistry) NewConfig(name string) (any, bool) {
	switch name {
	case "alpha":
		return &alphaConfig{Name: "default", Every: Duration(time.Second), hidden: "kept"}, true
	case "beta":
		return &betaConfig{Level: 1}, true
	}
	return nil, false
}

// wrapped embeds the section, as the agent's Collectors does to add methods.
type wrapped struct {
	Plugins[testRegistry]
}

type pluginsConfig struct {
	Shared  any                   `yaml:"shared"` // anchors for the alias cases
	Plugins Plugins[testRegistry] `yaml:"plugins"`
	Nested  struct {
		Things wrapped `yaml:"things"`
	} `yaml:"nested"`
}

// newPluginsConfig enables beta, level 7, by default.
func newPluginsConfig() *pluginsConfig {
	c := &pluginsConfig{}
	c.Plugins.Set("beta", &betaConfig{Level: 7})
	return c
}

func TestPlugins(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		enabled []string // of plugins
		check   func(t *testing.T, c *pluginsConfig)
		wantErr []string // the joined errors, in order
	}{
		{
			name: "valid", enabled: []string{"alpha", "beta"},
			in: `plugins:
  alpha:
    name: a
    every: 1m
    tags: [x, y]
    limits: {max: 3}
    targets: [{addr: h:1}]
    routes: {r1: {to: t}}
  beta:
`,
			check: func(t *testing.T, c *pluginsConfig) {
				a, ok := c.Plugins.Config("alpha")
				require.True(t, ok)
				ac := a.(*alphaConfig)
				require.Equal(t, "a", ac.Name)
				require.Equal(t, time.Minute, ac.Every.D())
				require.Equal(t, []string{"x", "y"}, ac.Tags)
				require.Equal(t, 3, ac.Limits.Max)
				require.Equal(t, "h:1", ac.Targets[0].Addr)
				require.Equal(t, "t", ac.Routes["r1"].To)
				require.Equal(t, "kept", ac.hidden, "decoded over the plugin's defaults")
				b, _ := c.Plugins.Config("beta")
				require.Equal(t, 1, b.(*betaConfig).Level, "null: the plugin's own defaults")
			},
		},
		{name: "no section keeps the defaults", in: "shared: 1\n", enabled: []string{"beta"},
			check: func(t *testing.T, c *pluginsConfig) {
				b, _ := c.Plugins.Config("beta")
				require.Equal(t, 7, b.(*betaConfig).Level)
			}},
		{name: "null section keeps the defaults", in: "plugins:\n", enabled: []string{"beta"}},
		{name: "a section replaces the defaults", in: "plugins:\n  alpha: {}\n", enabled: []string{"alpha"}},
		{name: "file order", in: "plugins:\n  beta: {}\n  alpha: {}\n", enabled: []string{"beta", "alpha"}},
		{name: "disabled", in: "plugins:\n  alpha: {enabled: false}\n  beta: {enabled: true}\n", enabled: []string{"beta"}},
		{name: "empty section", in: "plugins: {}\n", enabled: nil},
		{name: "alias and merge", in: "shared: &s {name: n}\nplugins:\n  alpha:\n    <<: *s\n    tags: [t]\n  beta: &b {level: 2}\n",
			enabled: []string{"alpha", "beta"},
			check: func(t *testing.T, c *pluginsConfig) {
				a, _ := c.Plugins.Config("alpha")
				require.Equal(t, "n", a.(*alphaConfig).Name)
			}},
		{name: "embedded section", in: "nested:\n  things:\n    beta: {level: 3}\n", enabled: []string{"beta"},
			check: func(t *testing.T, c *pluginsConfig) {
				require.Equal(t, []string{"beta"}, c.Nested.Things.Enabled())
			}},

		{name: "unknown plugin", in: "plugins:\n  gamma: {}\n",
			wantErr: []string{`p.yaml:2: unknown key "plugins.gamma" (under plugins: alpha, beta)`}},
		{name: "unknown key", in: "plugins:\n  alpha:\n    nmae: x\n",
			wantErr: []string{`p.yaml:3: unknown key "plugins.alpha.nmae" (under plugins.alpha: enabled, name, every, tags, limits, targets, routes)`}},
		{name: "an ignored field is no key", in: "plugins:\n  alpha:\n    hidden: x\n",
			wantErr: []string{`p.yaml:3: unknown key "plugins.alpha.hidden"`}},
		{name: "unknown nested key", in: "plugins:\n  alpha:\n    limits:\n      mx: 1\n",
			wantErr: []string{`p.yaml:4: unknown key "plugins.alpha.limits.mx" (under plugins.alpha.limits: max)`}},
		{name: "unknown key in a list", in: "plugins:\n  alpha:\n    targets:\n      - addr: a\n      - adr: b\n",
			wantErr: []string{`p.yaml:5: unknown key "plugins.alpha.targets[1].adr" (under plugins.alpha.targets[1]: addr)`}},
		{name: "unknown key in a map value", in: "plugins:\n  alpha:\n    routes:\n      r1: {too: x}\n",
			wantErr: []string{`p.yaml:4: unknown key "plugins.alpha.routes.r1.too" (under plugins.alpha.routes.r1: to)`}},
		{name: "unknown key in an embedded section", in: "nested:\n  things:\n    alpha: {nmae: x}\n",
			wantErr: []string{`p.yaml:3: unknown key "nested.things.alpha.nmae" (under nested.things.alpha: enabled, name, every, tags, limits, targets, routes)`}},
		{name: "unknown key behind an alias", in: "shared: &s {name: n, bogus: 1}\nplugins:\n  alpha: *s\n",
			wantErr: []string{`p.yaml:1: unknown key "shared.bogus"`}},
		{name: "unknown key in a merge", in: "shared: &s {bogus: 1}\nplugins:\n  alpha:\n    <<: *s\n",
			wantErr: []string{`p.yaml:1: unknown key "shared.bogus"`}},
		{name: "type mismatch", in: "plugins:\n  beta:\n    level: high\n",
			wantErr: []string{`p.yaml:3: field "plugins.beta.level": string "high" where an integer belongs`}},
		{name: "a fraction for a whole number", in: "plugins:\n  beta:\n    level: 2.5\n",
			wantErr: []string{`p.yaml:3: field "plugins.beta.level": number "2.5" where an integer belongs`}},
		{name: "enabled not a boolean", in: "plugins:\n  alpha:\n    enabled: maybe\n",
			wantErr: []string{`p.yaml:3: field "plugins.alpha.enabled": string "maybe" where true or false belongs`}},
		{name: "bad duration", in: "plugins:\n  alpha: {every: 10}\n",
			wantErr: []string{`p.yaml:2: field "plugins.alpha.every": invalid duration "10"`}},
		{name: "validate names the key", in: "plugins:\n  alpha:\n    tags: []\n    name: bad\n",
			wantErr: []string{`p.yaml:4: field "plugins.alpha.name": "bad": want another`}},
		// A plugin's own error quoting a value with a password shows it redacted.
		{name: "validate redacts", in: "plugins:\n  alpha:\n    name: \"u:Hunter2P@h:1\"\n",
			wantErr: []string{`p.yaml:3: field "plugins.alpha.name": "u:***@h:1": want no '@'`}},
		{name: "validate about the plugin", in: "plugins:\n  alpha:\n    name: whole\n",
			wantErr: []string{`p.yaml:2: field "plugins.alpha": the whole plugin is wrong`}},
		{name: "a disabled plugin is checked too", in: "plugins:\n  alpha: {enabled: false, name: whole}\n",
			wantErr: []string{`p.yaml:2: field "plugins.alpha": the whole plugin is wrong`}},
		{name: "plugin value is a list", in: "plugins:\n  alpha: [1]\n",
			wantErr: []string{`p.yaml:2: field "plugins.alpha": a list where a mapping belongs (want a mapping, e.g. {enabled: true})`}},
		{name: "plugin value is a string", in: "plugins:\n  alpha: yes\n",
			wantErr: []string{`p.yaml:2: field "plugins.alpha": a string where a mapping belongs`}},
		{name: "section is a string", in: "plugins: alpha\n",
			wantErr: []string{`p.yaml:1: field "plugins": a string where a mapping belongs (keys: alpha, beta)`}},
		{name: "section is a list", in: "plugins: [alpha]\n",
			wantErr: []string{`p.yaml:1: field "plugins": a list where a mapping belongs (keys: alpha, beta)`}},
		{name: "plugin name is a list", in: "plugins:\n  [alpha]: {}\n",
			wantErr: []string{`p.yaml:2: a list where a string belongs (a plugin name)`}},
		{name: "empty plugin name", in: "plugins:\n  \"\": {}\n",
			wantErr: []string{`p.yaml:2: unknown key "plugins." (under plugins: alpha, beta)`}},
		{name: "duplicate plugin", in: "plugins:\n  alpha: {}\n  alpha: {}\n",
			wantErr: []string{`p.yaml:3: mapping key "alpha" already defined at line 2`}},
		{name: "every error is reported", in: "shared: 1\nplugins:\n  alpha:\n    nmae: x\n    every: x\n  gamma:\n  beta: {level: x}\n",
			wantErr: []string{
				`p.yaml:4: unknown key "plugins.alpha.nmae"`,
				`p.yaml:5: field "plugins.alpha.every": invalid duration "x"`,
				`p.yaml:6: unknown key "plugins.gamma" (under plugins: alpha, beta)`,
				`p.yaml:7: field "plugins.beta.level": string "x" where an integer belongs`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newPluginsConfig()
			err := Decode(strings.NewReader(tc.in), "p.yaml", c)
			if tc.wantErr != nil {
				require.Error(t, err)
				t.Log(err)
				lines := strings.Split(err.Error(), "\n")
				require.Len(t, lines, len(tc.wantErr))
				for i, w := range tc.wantErr {
					require.True(t, strings.HasPrefix(lines[i], w), "error %d:\n got %s\nwant %s…", i, lines[i], w)
				}
				require.NotContains(t, err.Error(), "Config", "never a Go type")
				return
			}
			require.NoError(t, err)
			if tc.name != "embedded section" {
				require.Equal(t, tc.enabled, c.Plugins.Enabled())
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// checkedPlugins is a config with a Plugins section and values of its own to check.
type checkedPlugins struct {
	Level   int                   `yaml:"level"`
	Plugins Plugins[testRegistry] `yaml:"plugins"`
	Limit   int                   `yaml:"limit"`
}

func (c *checkedPlugins) Validate() error {
	var errs []error
	if c.Level < 0 {
		errs = append(errs, Bad("level", "%d: want 0 or more", c.Level))
	}
	if len(c.Plugins.Enabled()) == 0 {
		errs = append(errs, Bad("plugins", "none enabled"))
	}
	if c.Limit < 0 {
		errs = append(errs, Bad("limit", "%d: want 0 or more", c.Limit))
	}
	return errors.Join(errs...)
}

// TestPluginValuesWithTheOthers: the values a plugin's Validate refuses are reported with
// the values the config's Validate refuses, all at once, in the file's order; a plugin
// refused is still enabled, so no "none enabled" follows. With a key or a type wrong
// anywhere, the values are not checked: the keys come first (the plugin's refused values
// with them, as the section decoded them).
func TestPluginValuesWithTheOthers(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // the joined errors, in order
	}{
		{"values", "level: -1\nplugins:\n  alpha:\n    name: bad\n  beta: {}\nlimit: -2\n", []string{
			`p.yaml:1: field "level": -1: want 0 or more`,
			`p.yaml:4: field "plugins.alpha.name": "bad": want another`,
			`p.yaml:6: field "limit": -2: want 0 or more`,
		}},
		{"the only plugin refused", "plugins:\n  alpha: {name: whole}\nlimit: -2\n", []string{
			`p.yaml:2: field "plugins.alpha": the whole plugin is wrong`,
			`p.yaml:3: field "limit": -2: want 0 or more`,
		}},
		{"a key wrong", "level: -1\nplugins:\n  alpha:\n    name: bad\nlimt: -2\n", []string{
			`p.yaml:4: field "plugins.alpha.name": "bad": want another`,
			`p.yaml:5: unknown key "limt" (at the top level: level, plugins, limit)`,
		}},
		{"a fraction for a whole number", "level: -1\nplugins:\n  alpha: {name: bad}\nlimit: 2.5\n", []string{
			`p.yaml:3: field "plugins.alpha.name": "bad": want another`,
			`p.yaml:4: field "limit": number "2.5" where an integer belongs`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode(strings.NewReader(tc.in), "p.yaml", &checkedPlugins{})
			require.EqualError(t, err, strings.Join(tc.want, "\n"))
		})
	}
	var c checkedPlugins
	require.NoError(t, Decode(strings.NewReader("level: 1\nplugins:\n  alpha: {name: a}\nlimit: 2\n"), "p.yaml", &c))
	require.Equal(t, []string{"alpha"}, c.Plugins.Enabled())
}

// TestPluginsSet: Set enables in order, replaces a config in place, and Enabled is a copy.
func TestPluginsSet(t *testing.T) {
	var p Plugins[testRegistry]
	p.Set("beta", &betaConfig{Level: 1})
	p.Set("alpha", &alphaConfig{})
	p.Set("beta", &betaConfig{Level: 2})
	names := p.Enabled()
	require.Equal(t, []string{"beta", "alpha"}, names)
	names[0] = "x"
	require.Equal(t, []string{"beta", "alpha"}, p.Enabled())
	b, ok := p.Config("beta")
	require.True(t, ok)
	require.Equal(t, 2, b.(*betaConfig).Level)
	_, ok = p.Config("gamma")
	require.False(t, ok)
}

func FuzzDecodePlugins(f *testing.F) {
	for _, s := range []string{
		"plugins:\n  alpha: {name: a, tags: [x], limits: {max: 1}, targets: [{addr: b}], routes: {r: {to: c}}}\n  beta:\n",
		"plugins:\n  gamma: {}\n",
		"plugins:\n  alpha: {nmae: x, enabled: maybe}\n",
		"plugins: [alpha]\n",
		"plugins:\n  alpha: [1]\n",
		"shared: &s {name: n, bogus: 1}\nplugins:\n  alpha: *s\n  beta: *s\n",
		"shared: &s [*s]\nplugins:\n  alpha:\n    <<: *s\n",
		"shared: &a {targets: [*a]}\nplugins:\n  alpha: *a\n",
		"plugins:\n  alpha: {name: bad}\n  alpha: {}\n",
		"nested:\n  things:\n    alpha: {name: whole}\n",
		"000000: &a {[]}\nplugins: *a", // a key that is no string, and no "field  not found"
		"plugins:\n  \"\": {}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Decode(bytes.NewReader(data), "fuzz.yaml", newPluginsConfig())
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
		for _, typ := range []string{"alphaConfig", "betaConfig", "Plugins[", "struct {"} {
			if strings.Contains(err.Error(), typ) {
				t.Fatalf("error names a Go type: %v", err)
			}
		}
	})
}
