package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Registry is the set of plugins a Plugins section configures. Plugins calls the methods
// of R's zero value, so that the decoder can name a plugin's keys from the type alone
// when it reports an unknown one: a registry is an empty struct type whose methods read
// a package's table (the agent's collector.Lookup).
type Registry interface {
	// Names returns the registered names, sorted.
	Names() []string
	// NewConfig returns a new config of the named plugin holding its defaults: a pointer
	// to a struct, which must not have an "enabled" key nor an ",inline" map (its keys
	// sit beside "enabled"). ok is false when no plugin has that name. If the config has
	// a Validate() error method, it is called once decoded.
	NewConfig(name string) (cfg any, ok bool)
}

// Plugins is a section whose keys name registered plugins and whose values are each
// plugin's config plus "enabled" (default true), as the agent's collectors:
//
//	collectors:
//	  host: {per_cpu: true}
//	  wave:                    # null: the plugin with its defaults
//	  process: {enabled: false, name: mysqld}
//
// It decodes as strictly as the rest of a file (Decode): an unknown name or key, a type
// mismatch and a plugin's Validate error name the file, the line and the dotted key. A
// section in the file replaces the plugins a role enabled with Set; a null one keeps them.
type Plugins[R Registry] struct {
	names   []string // enabled, in file order
	configs map[string]any
}

// Set enables the named plugin with cfg, a config as R.NewConfig returns it: a role's
// default plugins, or a test's.
func (p *Plugins[R]) Set(name string, cfg any) {
	if p.configs == nil {
		p.configs = map[string]any{}
	}
	if _, ok := p.configs[name]; !ok {
		p.names = append(p.names, name)
	}
	p.configs[name] = cfg
}

// Enabled returns the names of the enabled plugins, in file order.
func (p Plugins[R]) Enabled() []string { return append([]string(nil), p.names...) }

// Config returns the decoded config of an enabled plugin.
func (p Plugins[R]) Config(name string) (any, bool) {
	c, ok := p.configs[name]
	return c, ok
}

// UnmarshalYAML implements yaml.Unmarshaler. Its errors are a *yaml.TypeError in the yaml
// package's words, with lines, which Decode turns into errors naming the dotted key as it
// does the decoder's own (translate).
func (p *Plugins[R]) UnmarshalYAML(n *yaml.Node) error {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	var reg R
	if n.Kind != yaml.MappingNode {
		return lineErrors(fmt.Sprintf("line %d: cannot unmarshal %s into plugins (keys: %s)",
			n.Line, n.ShortTag(), strings.Join(reg.Names(), ", ")))
	}
	*p = Plugins[R]{}
	var errs []string
	first := map[string]int{} // name -> line, for duplicates
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Sprintf("line %d: cannot unmarshal %s into string (a plugin name)", k.Line, k.ShortTag()))
			continue
		}
		// Decode's own duplicate check does not reach a section that decodes itself.
		if line, dup := first[k.Value]; dup {
			errs = append(errs, fmt.Sprintf("line %d: mapping key %q already defined at line %d", k.Line, k.Value, line))
			continue
		}
		first[k.Value] = k.Line
		cfg, ok := reg.NewConfig(k.Value)
		if !ok {
			errs = append(errs, unknownField(k, reflect.TypeFor[Plugins[R]]()))
			continue
		}
		enabled, e := decodePlugin(k, v, cfg)
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		// A disabled plugin is checked too: its section is kept for later, so fix it now.
		// One whose values are refused is still enabled: Decode reports them with the
		// other values of the file, where "no plugin enabled" would be a false lead.
		errs = append(errs, validatePlugin(k, v, cfg)...)
		if enabled {
			p.Set(k.Value, cfg)
		}
	}
	return lineErrors(errs...)
}

// decodePlugin decodes the value v of the plugin named by key k into cfg and says
// whether the plugin is enabled.
func decodePlugin(k, v *yaml.Node, cfg any) (enabled bool, errs []string) {
	enabled = true
	switch {
	case isNull(v): // the plugin with its defaults
	case v.Kind != yaml.MappingNode:
		return false, []string{fmt.Sprintf("line %d: cannot unmarshal %s into %s (want a mapping, e.g. {enabled: true})", v.Line, v.ShortTag(), k.Value)}
	default:
		entry := reflect.New(entryType(reflect.TypeOf(cfg)))
		entry.Elem().Field(1).Set(reflect.ValueOf(cfg))
		// Node.Decode cannot refuse unknown keys (KnownFields is the Decoder's), so they
		// are checked first, the same way.
		errs = unknownKeys(v, entry.Type())
		if err := v.Decode(entry.Interface()); err != nil {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return false, append(errs, err.Error())
			}
			errs = append(errs, te.Errors...)
		}
		if len(errs) > 0 {
			return false, errs
		}
		if e := entry.Elem().Field(0); !e.IsNil() {
			enabled = e.Elem().Bool()
		}
	}
	return enabled, nil
}

// entryType is what one plugin's value decodes into: its config with "enabled" beside.
func entryType(cfg reflect.Type) reflect.Type {
	return reflect.StructOf([]reflect.StructField{
		{Name: "Enabled", Type: reflect.TypeFor[*bool](), Tag: `yaml:"enabled"`},
		{Name: "Config", Type: cfg, Tag: `yaml:",inline"`},
	})
}

// validatePlugin calls cfg's Validate, if it has one, and reports each of its errors
// (joined with errors.Join, it may return several) as fieldError does, the only
// messages of a Plugins section in that form (valuesOnly tells them apart). An error
// that begins with one of the plugin's keys ("url \"x\": …", "mount_ignore: …") is about
// that key, and reported at its line without repeating it; any other is about the whole
// plugin.
func validatePlugin(k, v *yaml.Node, cfg any) []string {
	vd, ok := cfg.(Validator)
	if !ok {
		return nil
	}
	err := vd.Validate()
	if err == nil {
		return nil
	}
	type located struct {
		line int
		msg  string
	}
	var errs []located
	for _, e := range flatten(err, nil) {
		line, msg := pluginError(k, v, e.Error())
		errs = append(errs, located{line, msg})
	}
	// In the file's order, as the decoder's own.
	slices.SortStableFunc(errs, func(a, b located) int { return a.line - b.line })
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.msg
	}
	return msgs
}

// pluginError is msg, an error of the plugin named by the key k whose value is v, as
// fieldError reports it, and its line: that of the plugin's key it begins with, if any.
func pluginError(k, v *yaml.Node, msg string) (int, string) {
	line, field := k.Line, k.Value
	msg = redactNodeValues(v, msg)
	if v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			sub := resolve(v.Content[i])
			rest, ok := strings.CutPrefix(msg, sub.Value)
			if sub.Value != "" && ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " ")) {
				line, field = sub.Line, k.Value+"."+sub.Value
				msg = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
				break
			}
		}
	}
	return line, fieldError(line, field, msg)
}

// pluginSection is how the decoder sees a Plugins section of any registry when it names
// the known keys below one (knownKeys): by the type alone, from R's zero value.
type pluginSection interface {
	pluginNames() []string
	// pluginEntry is the type the named plugin's value decodes into; nil if unknown.
	pluginEntry(name string) reflect.Type
}

func (Plugins[R]) pluginNames() []string {
	var reg R
	return reg.Names()
}

func (Plugins[R]) pluginEntry(name string) reflect.Type {
	var reg R
	cfg, ok := reg.NewConfig(name)
	if !ok {
		return nil
	}
	return entryType(reflect.TypeOf(cfg))
}

var pluginSectionType = reflect.TypeFor[pluginSection]()

// sectionOf returns t as a Plugins section when it is one (or embeds one).
func sectionOf(t reflect.Type) (pluginSection, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || !reflect.PointerTo(t).Implements(pluginSectionType) {
		return nil, false
	}
	return reflect.New(t).Interface().(pluginSection), true
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// lineErrors returns msgs, each "line N: …", as the *yaml.TypeError the decoder collects
// from an UnmarshalYAML and goes on; nil when there are none.
func lineErrors(msgs ...string) error {
	if len(msgs) == 0 {
		return nil
	}
	return &yaml.TypeError{Errors: msgs}
}

// redactNodeValues is msg with every scalar value under n that may hold a credential
// (one Redact changes) shown redacted: a plugin's Validate words its own errors, not
// through Bad, and may quote a value of the file as it is.
func redactNodeValues(n *yaml.Node, msg string) string {
	if n == nil {
		return msg
	}
	if n.Kind == yaml.ScalarNode {
		if r := Redact(n.Value); r != n.Value {
			msg = strings.ReplaceAll(msg, n.Value, r)
		}
		return msg
	}
	for _, c := range n.Content {
		msg = redactNodeValues(c, msg)
	}
	return msg
}
