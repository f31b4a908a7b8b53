package dashboards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/elasticsearch"
)

// The Grafana dashboards are checked against Grafana's own dashboard model, as the
// grafana-foundation-sdk generates it from Grafana's schemas (go.mod pins the release;
// its dashboard model is schemaVersion 42, Grafana 12). No Grafana runs here, so this is
// what stands for "Grafana would load this file as written":
//
//   - the file decodes with the SDK's strict decoder: a key the model does not know, a
//     value of the wrong type or a missing required field is an error, down into every
//     panel's options and field config (the panel plugin's model) and every target (the
//     Elasticsearch datasource's query model);
//   - every panel type is a plugin the SDK models and every target decodes as an
//     Elasticsearch query, so that nothing falls back to the SDK's untyped bags;
//   - the model's own validation passes, and every value of one of the model's
//     enumerations (graph modes, legend placements, variable refresh, ...) is one of its
//     constants, which the JSON decoder alone would not check;
//   - encoding the decoded model gives back every key and value of the file, so that no
//     part of the file was silently dropped or converted where the SDK decodes loosely.
//
// The file is what Grafana provisions; the model is only the judge of it.

var registerGrafanaPlugins = sync.OnceFunc(plugins.RegisterDefaultPlugins)

// grafanaModelErrors returns why raw is not a dashboard of Grafana's model.
func grafanaModelErrors(raw []byte) []error {
	registerGrafanaPlugins()
	var errs []error
	// The strict pass only reports: on success the SDK's strict decoders return an empty,
	// non-nil cog.BuildErrors (v0.0.22), and a panel then drops its options and targets as
	// if they had failed. So the model the other checks read comes from the SDK's ordinary
	// decoder, which fills the same types (panel options and targets by plugin).
	var strict dashboard.Dashboard
	for _, err := range buildErrors(strict.UnmarshalJSONStrict(raw)) {
		errs = append(errs, fmt.Errorf("strict decode: %w", err))
	}
	if len(errs) > 0 {
		return errs
	}
	var d dashboard.Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return []error{fmt.Errorf("decode: %w", err)}
	}
	for _, err := range buildErrors(d.Validate()) {
		errs = append(errs, fmt.Errorf("validate: %w", err))
	}

	var panels []dashboard.Panel
	for _, p := range d.Panels {
		if p.Panel != nil {
			panels = append(panels, *p.Panel)
		}
		if p.RowPanel != nil {
			panels = append(panels, p.RowPanel.Panels...)
		}
	}
	for _, p := range panels {
		title := ""
		if p.Title != nil {
			title = *p.Title
		}
		where := fmt.Sprintf("panel %q (%s)", title, p.Type)
		cfg, ok := cog.ConfigForPanelcfgVariant(p.Type)
		if !ok || cfg.StrictOptionsUnmarshaler == nil {
			errs = append(errs, fmt.Errorf("%s: panel type %q is not a panel plugin the SDK models", where, p.Type))
		}
		for i, tg := range p.Targets {
			if _, ok := tg.(*elasticsearch.Dataquery); !ok {
				errs = append(errs, fmt.Errorf("%s: target %d decodes as %T, not as an Elasticsearch query", where, i, tg))
			}
		}
	}

	errs = append(errs, enumErrors(reflect.ValueOf(d), "")...)

	out, err := json.Marshal(d)
	if err != nil {
		return append(errs, fmt.Errorf("encode: %w", err))
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		return append(errs, err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return append(errs, err)
	}
	for _, p := range lostInModel("", want, got) {
		errs = append(errs, fmt.Errorf("not kept by the model: %s", p))
	}
	return errs
}

// enumValues holds, by package and type name, the constants of the SDK's enumerated
// types (named string or integer types, as the SDK generates Grafana's enums). Go cannot
// list a type's constants, so they are read from the SDK's source.
var enumValues = struct {
	sync.Mutex
	byPkg map[string]map[string]map[string]bool
}{byPkg: map[string]map[string]map[string]bool{}}

func sdkEnum(t reflect.Type) (map[string]bool, error) {
	enumValues.Lock()
	defer enumValues.Unlock()
	pkg, ok := enumValues.byPkg[t.PkgPath()]
	if !ok {
		pkg = map[string]map[string]bool{}
		bp, err := build.Import(t.PkgPath(), ".", build.FindOnly)
		if err != nil {
			return nil, fmt.Errorf("find the SDK's source of %s: %w", t.PkgPath(), err)
		}
		files, err := filepath.Glob(filepath.Join(bp.Dir, "*.go"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("no source in %s (%v)", bp.Dir, err)
		}
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			for _, decl := range af.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					typ, ok := vs.Type.(*ast.Ident)
					if !ok {
						continue
					}
					for _, v := range vs.Values {
						lit, ok := v.(*ast.BasicLit)
						if !ok {
							continue
						}
						val := lit.Value
						if lit.Kind == token.STRING {
							if val, err = strconv.Unquote(val); err != nil {
								return nil, err
							}
						}
						if pkg[typ.Name] == nil {
							pkg[typ.Name] = map[string]bool{}
						}
						pkg[typ.Name][val] = true
					}
				}
			}
		}
		enumValues.byPkg[t.PkgPath()] = pkg
	}
	return pkg[t.Name()], nil
}

// enumErrors walks a decoded model and returns the values of the SDK's enumerated types
// that are none of the type's constants: Grafana's model knows "area" as a stat graph
// mode, the JSON decoder would take "areas" as well.
func enumErrors(v reflect.Value, path string) []error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return enumErrors(v.Elem(), path)
	case reflect.Struct:
		var out []error
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			p := path + "." + name
			if v.Type() == reflect.TypeFor[dashboard.PanelOrRowPanel]() {
				p = path // a union: its one field is the panel itself
			}
			out = append(out, enumErrors(v.Field(i), p)...)
		}
		return out
	case reflect.Slice, reflect.Array:
		var out []error
		for i := range v.Len() {
			out = append(out, enumErrors(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Map:
		var out []error
		iter := v.MapRange()
		for iter.Next() {
			out = append(out, enumErrors(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key()))...)
		}
		return out
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		t := v.Type()
		if !strings.HasPrefix(t.PkgPath(), "github.com/grafana/grafana-foundation-sdk/go/") {
			return nil
		}
		allowed, err := sdkEnum(t)
		if err != nil {
			return []error{err}
		}
		if len(allowed) == 0 {
			return nil // a named type without constants: not an enumeration
		}
		var val string
		if v.Kind() == reflect.String {
			// A key the file leaves out decodes as "", which no enumeration has: the SDK
			// types the field config's data links as dashboard links, whose type the
			// files have no reason to give.
			if val = v.String(); val == "" {
				return nil
			}
		} else {
			val = fmt.Sprint(v.Interface())
		}
		if !allowed[val] {
			vals := make([]string, 0, len(allowed))
			for a := range allowed {
				vals = append(vals, strconv.Quote(a))
			}
			sort.Strings(vals)
			return []error{fmt.Errorf("%s: %q is not a %s (%s)", orRoot(path), val, t, strings.Join(vals, ", "))}
		}
	}
	return nil
}

// buildErrors returns the errors in err, none for an empty cog.BuildErrors.
func buildErrors(err error) []error {
	var be cog.BuildErrors
	if !errors.As(err, &be) {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var out []error
	for _, e := range be {
		out = append(out, e)
	}
	return out
}

// lostInModel lists the paths where the file (want) has a key or value that the
// re-encoded model (got) does not have. Keys the model adds (its defaults) are allowed.
func lostInModel(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: object became %s", orRoot(path), describe(got))}
		}
		var out []string
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				// The model omits empty values it would not write; an empty object,
				// array or string in the file carries nothing Grafana reads.
				if isEmpty(w[k]) {
					continue
				}
				out = append(out, fmt.Sprintf("%s.%s: dropped (%s)", path, k, describe(w[k])))
				continue
			}
			out = append(out, lostInModel(path+"."+k, w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			if len(w) == 0 && got == nil {
				return nil
			}
			return []string{fmt.Sprintf("%s: array became %s", orRoot(path), describe(got))}
		}
		if len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %d elements became %d", orRoot(path), len(w), len(g))}
		}
		var out []string
		for i := range w {
			out = append(out, lostInModel(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: %s became %s", orRoot(path), describe(want), describe(got))}
		}
		return nil
	}
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case string:
		return v == ""
	}
	return false
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func describe(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return fmt.Sprintf("%T %s", v, s)
}

// TestGrafanaModel checks every shipped Grafana dashboard against Grafana's dashboard model.
func TestGrafanaModel(t *testing.T) {
	for _, f := range globFiles(t, "grafana/*.json") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range grafanaModelErrors(raw) {
				t.Error(err)
			}
		})
	}
}

// TestGrafanaModelCatches shows that the model check fails on the mistakes it exists for:
// keys Grafana does not know, values of the wrong type, and queries or panels it would not
// read as the file means them.
func TestGrafanaModelCatches(t *testing.T) {
	raw, err := os.ReadFile("grafana/binlake-overview.json")
	if err != nil {
		t.Fatal(err)
	}
	// firstPanel returns the first non-row panel of a decoded dashboard.
	firstPanel := func(d map[string]any) map[string]any {
		for _, p := range d["panels"].([]any) {
			if pm := p.(map[string]any); pm["type"] != "row" {
				return pm
			}
		}
		t.Fatal("no panel")
		return nil
	}
	firstTarget := func(d map[string]any) map[string]any {
		return firstPanel(d)["targets"].([]any)[0].(map[string]any)
	}
	tests := []struct {
		name string
		edit func(d map[string]any)
		want string
	}{
		{"unknown dashboard key", func(d map[string]any) { d["refreshInterval"] = "30s" }, "unexpected field 'refreshInterval'"},
		{"schemaVersion a string", func(d map[string]any) { d["schemaVersion"] = "39" }, "schemaVersion"},
		{"unknown panel key", func(d map[string]any) { firstPanel(d)["query"] = "x" }, "unexpected field 'query'"},
		{"gridPos a string", func(d map[string]any) { firstPanel(d)["gridPos"].(map[string]any)["h"] = "4" }, "gridPos"},
		{"unknown stat option", func(d map[string]any) {
			firstPanel(d)["options"].(map[string]any)["colourMode"] = "value"
		}, "unexpected field 'colourMode'"},
		{"unknown panel type", func(d map[string]any) { firstPanel(d)["type"] = "singlestat" }, `panel type "singlestat"`},
		{"unknown target key", func(d map[string]any) { firstTarget(d)["index"] = "binlake-metrics-*" }, "unexpected field 'index'"},
		{"metrics not a list", func(d map[string]any) { firstTarget(d)["metrics"] = map[string]any{"type": "count"} }, "targets[0]"},
		{"unknown field config key", func(d map[string]any) {
			firstPanel(d)["fieldConfig"].(map[string]any)["defaults"].(map[string]any)["decimalz"] = 2
		}, "fieldConfig.defaults.decimalz: dropped"},
		{"field config min a string", func(d map[string]any) {
			firstPanel(d)["fieldConfig"].(map[string]any)["defaults"].(map[string]any)["min"] = "0"
		}, "fieldConfig"},
		{"target of another datasource", func(d map[string]any) {
			p := firstPanel(d)
			p["datasource"] = map[string]any{"type": "influxdb", "uid": "x"}
			for _, tg := range p["targets"].([]any) {
				tg.(map[string]any)["datasource"] = map[string]any{"type": "influxdb", "uid": "x"}
			}
		}, "not as an Elasticsearch query"},
		{"stat graph mode not an enum value", func(d map[string]any) {
			firstPanel(d)["options"].(map[string]any)["graphMode"] = "areas"
		}, `"areas" is not a common.BigValueGraphMode`},
		{"variable refresh not an enum value", func(d map[string]any) {
			d["templating"].(map[string]any)["list"].([]any)[1].(map[string]any)["refresh"] = 3
		}, `"3" is not a dashboard.VariableRefresh`},
		{"unknown templating key", func(d map[string]any) {
			d["templating"].(map[string]any)["list"].([]any)[0].(map[string]any)["default"] = "x"
		}, "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			tc.edit(d)
			var buf bytes.Buffer
			if err := json.NewEncoder(&buf).Encode(d); err != nil {
				t.Fatal(err)
			}
			errs := grafanaModelErrors(buf.Bytes())
			if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), tc.want) }) {
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
	if errs := grafanaModelErrors(raw); len(errs) != 0 {
		t.Errorf("unedited file: %v", errs)
	}
}
