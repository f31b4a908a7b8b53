package dashboards

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// kibanaObject is one saved object of an ndjson export (Kibana 7.17).
type kibanaObject struct {
	ID               string            `json:"id"`
	Type             string            `json:"type"`
	Attributes       map[string]any    `json:"attributes"`
	References       []kibanaReference `json:"references"`
	MigrationVersion map[string]string `json:"migrationVersion"`
	CoreMigration    string            `json:"coreMigrationVersion"`
}

type kibanaReference struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

func loadKibana(t testing.TB) map[string][]kibanaObject {
	t.Helper()
	out := map[string][]kibanaObject{}
	for _, file := range globFiles(t, "kibana/*.ndjson") {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var o kibanaObject
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&o); err != nil {
				t.Fatalf("%s:%d: %v", file, line, err)
			}
			out[file] = append(out[file], o)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		f.Close()
	}
	return out
}

// attrJSON decodes an attribute that Kibana stores as a JSON string.
func attrJSON(o kibanaObject, path []string, v any) error {
	var cur any = o.Attributes
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: no %s", o.Type, o.ID, strings.Join(path, "."))
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	if !ok {
		return fmt.Errorf("%s %s: %s is not a JSON string", o.Type, o.ID, strings.Join(path, "."))
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("%s %s: %s: %w", o.Type, o.ID, strings.Join(path, "."), err)
	}
	return nil
}

type kibanaSearchSource struct {
	Query struct {
		Query    string `json:"query"`
		Language string `json:"language"`
	} `json:"query"`
	Filter       []any  `json:"filter"`
	IndexRefName string `json:"indexRefName"`
}

type kibanaVisState struct {
	Title string `json:"title"`
	Type  string `json:"type"`
	Aggs  []struct {
		ID      string         `json:"id"`
		Type    string         `json:"type"`
		Schema  string         `json:"schema"`
		Enabled bool           `json:"enabled"`
		Params  map[string]any `json:"params"`
	} `json:"aggs"`
	Params struct {
		Controls []struct {
			FieldName           string `json:"fieldName"`
			IndexPatternRefName string `json:"indexPatternRefName"`
		} `json:"controls"`
	} `json:"params"`
}

// kibanaUses lists every query of a file's visualizations, with structural problems:
// unresolved references, index patterns other than the judge's, unknown types.
func kibanaUses(file string, objs []kibanaObject) ([]use, []error) {
	var uses []use
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(file+": "+format, a...)) }
	byKey := map[string]kibanaObject{}
	patterns := map[string]kibanaObject{}
	for _, o := range objs {
		if _, dup := byKey[o.Type+"/"+o.ID]; dup {
			bad("%s %s twice", o.Type, o.ID)
		}
		byKey[o.Type+"/"+o.ID] = o
		if o.Type == "index-pattern" {
			patterns[o.ID] = o
		}
		if o.CoreMigration != "" && !strings.HasPrefix(o.CoreMigration, "7.17.") {
			bad("%s %s: coreMigrationVersion %q, want 7.17.x (the engine the tests use)", o.Type, o.ID, o.CoreMigration)
		}
	}
	// ref resolves a named reference of o to an object in the same file.
	ref := func(o kibanaObject, name, typ string) (kibanaObject, bool) {
		for _, r := range o.References {
			if r.Name == name {
				t, ok := byKey[r.Type+"/"+r.ID]
				if !ok || r.Type != typ {
					bad("%s %s: reference %q → %s %s is not in the file", o.Type, o.ID, name, r.Type, r.ID)
				}
				return t, ok
			}
		}
		bad("%s %s: no reference named %q", o.Type, o.ID, name)
		return kibanaObject{}, false
	}
	title := func(p kibanaObject) string { s, _ := p.Attributes["title"].(string); return s }
	for _, o := range objs {
		where := fmt.Sprintf("%s: %s %s", file, o.Type, o.ID)
		switch o.Type {
		case "index-pattern":
			tf, _ := o.Attributes["timeFieldName"].(string)
			uses = append(uses, use{where: where, index: title(o), varOnly: true,
				fields: []fieldUse{{tf, date, "timeFieldName"}}})
		case "visualization":
			var vs kibanaVisState
			if err := attrJSON(o, []string{"visState"}, &vs); err != nil {
				errs = append(errs, err)
				continue
			}
			var ss kibanaSearchSource
			if err := attrJSON(o, []string{"kibanaSavedObjectMeta", "searchSourceJSON"}, &ss); err != nil {
				errs = append(errs, err)
				continue
			}
			if ss.Query.Language != "lucene" {
				bad("%s: query language %q; the test checks Lucene queries", where, ss.Query.Language)
			}
			switch vs.Type {
			case "input_control_vis":
				for i, c := range vs.Params.Controls {
					p, _ := ref(o, c.IndexPatternRefName, "index-pattern")
					uses = append(uses, use{where: fmt.Sprintf("%s control %d", where, i), index: title(p), varOnly: true,
						fields: []fieldUse{{c.FieldName, keyword, "control"}}, split: c.FieldName})
				}
				if len(vs.Params.Controls) == 0 {
					bad("%s: no controls", where)
				}
			case "line", "area", "histogram", "metric", "table":
				p, _ := ref(o, ss.IndexRefName, "index-pattern")
				u := use{where: where, query: ss.Query.Query, index: title(p)}
				for _, a := range vs.Aggs {
					f, _ := a.Params["field"].(string)
					switch a.Type {
					case "avg", "max", "min", "sum":
						u.fields = append(u.fields, fieldUse{f, numeric, "metric " + a.Type})
						u.metric, u.mfield = a.Type, f
					case "cardinality":
						u.fields = append(u.fields, fieldUse{f, keyword, "metric " + a.Type})
						u.metric, u.mfield = a.Type, f
					case "terms":
						u.fields = append(u.fields, fieldUse{f, keyword, "terms"})
						u.split = f
					case "date_histogram":
						u.fields = append(u.fields, fieldUse{f, date, "date_histogram"})
					default:
						bad("%s: aggregation %q is not checked by this test", where, a.Type)
					}
				}
				uses = append(uses, u)
			default:
				bad("%s: visualization type %q is not checked by this test", where, vs.Type)
			}
		case "dashboard":
			var panels []struct {
				PanelRefName string `json:"panelRefName"`
				Type         string `json:"type"`
			}
			if err := attrJSON(o, []string{"panelsJSON"}, &panels); err != nil {
				errs = append(errs, err)
				continue
			}
			if len(panels) == 0 {
				bad("%s: no panels", where)
			}
			for _, p := range panels {
				ref(o, p.PanelRefName, p.Type)
			}
		default:
			bad("%s: saved object type %q is not checked by this test", where, o.Type)
		}
	}
	if len(patterns) != 1 {
		bad("%d index patterns, want 1", len(patterns))
	}
	return uses, errs
}

func TestKibanaSavedObjects(t *testing.T) {
	m := judgeMapping(t)
	for file, objs := range loadKibana(t) {
		t.Run(file, func(t *testing.T) {
			uses, errs := kibanaUses(file, objs)
			for _, u := range uses {
				errs = append(errs, checkUse(m, u, emittedNames, emittedLabels)...)
			}
			for _, err := range errs {
				t.Error(err)
			}
			types := map[string]int{}
			for _, o := range objs {
				types[o.Type]++
			}
			if types["index-pattern"] != 1 || types["visualization"] == 0 || types["dashboard"] == 0 {
				t.Errorf("object types %v: want one index-pattern, visualizations and a dashboard", types)
			}
		})
	}
}
