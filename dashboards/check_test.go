package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/binlake/binlake/agent"
	"github.com/binlake/binlake/judge/store/elastic"
)

// emittedNames are the point names the agent sends: its collectors' declared names and
// its own (each collector's test checks what it sends against its declaration).
var emittedNames = agent.PointNames()

// emittedLabels are the label keys the collectors put on points (unexported literals in
// agent/collector/*: host cpu, iface, mount, device; wave instance; process process;
// the agent's own collector).
var emittedLabels = []string{"cpu", "iface", "mount", "device", "instance", "process", "collector"}

// mapping is the judge's index template, as the elastic store installs it.
type mapping struct {
	pattern    string
	properties map[string]any
	dynamic    []map[string]any // dynamic_templates bodies: path_match + mapping
}

func judgeMapping(t testing.TB) mapping {
	t.Helper()
	s, err := elastic.New(elastic.Options{}) // does not contact an engine
	if err != nil {
		t.Fatalf("elastic.New: %v", err)
	}
	defer s.Close()
	// Round-trip through JSON so that the test reads what the engine receives.
	raw, err := json.Marshal(s.Template())
	if err != nil {
		t.Fatalf("encode template: %v", err)
	}
	var tmpl struct {
		IndexPatterns []string `json:"index_patterns"`
		Template      struct {
			Mappings struct {
				Properties       map[string]any              `json:"properties"`
				DynamicTemplates []map[string]map[string]any `json:"dynamic_templates"`
			} `json:"mappings"`
		} `json:"template"`
	}
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatalf("decode template: %v", err)
	}
	if len(tmpl.IndexPatterns) != 1 {
		t.Fatalf("template index_patterns = %v, want one", tmpl.IndexPatterns)
	}
	m := mapping{pattern: tmpl.IndexPatterns[0], properties: tmpl.Template.Mappings.Properties}
	for _, dt := range tmpl.Template.Mappings.DynamicTemplates {
		for _, body := range dt {
			m.dynamic = append(m.dynamic, body)
		}
	}
	return m
}

// fieldType returns the mapped type of field: from properties, else from a dynamic
// template whose path_match matches (labels.* → keyword), else "".
func (m mapping) fieldType(field string) string {
	if p, ok := m.properties[field].(map[string]any); ok {
		if typ, _ := p["type"].(string); typ != "object" {
			return typ
		}
		return ""
	}
	for _, dt := range m.dynamic {
		pm, _ := dt["path_match"].(string)
		if ok, _ := path.Match(pm, field); ok && pm != "" {
			if mp, ok := dt["mapping"].(map[string]any); ok {
				typ, _ := mp["type"].(string)
				return typ
			}
		}
	}
	return ""
}

// use is one query a dashboard runs: where it is, its Lucene query string, the index
// pattern it reads, and the fields it aggregates on (with the kind of use).
type use struct {
	where   string
	query   string
	index   string
	fields  []fieldUse
	metric  string // metric aggregation type (avg, max, sum, cardinality, count), "" for none
	mfield  string // the metric aggregation's field
	split   string // terms field, "" for none
	varOnly bool   // a template variable or control: no metric aggregation
}

type fieldUse struct {
	field string
	want  []string // acceptable mapped types
	role  string
}

var (
	numeric = []string{"double", "long", "integer", "float", "byte", "short"}
	keyword = []string{"keyword"}
	date    = []string{"date"}
)

var (
	// fieldRef finds "field:" in a Lucene query string; _exists_:X names X.
	fieldRef  = regexp.MustCompile(`(?:^|[\s(!+-])([A-Za-z_][A-Za-z0-9_.]*)\s*:`)
	existsRef = regexp.MustCompile(`_exists_\s*:\s*([A-Za-z0-9_.*]+)`)
	// metricRef finds the metrics a query selects: each is a field m.<name> of the
	// judge's documents, selected with _exists_:m.<name>.
	metricRef = regexp.MustCompile(`_exists_\s*:\s*m\.([a-z0-9_.]+)`)
)

// checkUse returns the problems of one query against the mapping and the emitted names.
func checkUse(m mapping, u use, names, labels []string) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{u.where}, a...)...))
	}
	if u.index != m.pattern {
		bad("reads index %q, the judge writes %q", u.index, m.pattern)
	}
	fields := slices.Clone(u.fields)
	for _, r := range fieldRef.FindAllStringSubmatch(u.query, -1) {
		if r[1] != "_exists_" {
			fields = append(fields, fieldUse{r[1], nil, "query"})
		}
	}
	for _, r := range existsRef.FindAllStringSubmatch(u.query, -1) {
		fields = append(fields, fieldUse{r[1], nil, "_exists_"})
	}
	for _, f := range fields {
		typ := m.fieldType(f.field)
		switch {
		case typ == "":
			bad("%s field %q is not in the judge's index mapping", f.role, f.field)
		case f.want != nil && !slices.Contains(f.want, typ):
			bad("%s field %q is mapped as %s, want one of %v", f.role, f.field, typ, f.want)
		}
		if k, ok := strings.CutPrefix(f.field, "labels."); ok && !slices.Contains(labels, k) {
			bad("%s field %q: no collector emits label %q (known: %v)", f.role, f.field, k, labels)
		}
	}
	selected := metricNames(u.query)
	if len(selected) == 0 && !u.varOnly {
		bad("query %q selects no metric (want _exists_:m.<name>)", u.query)
	}
	for _, n := range selected {
		if !slices.Contains(names, n) {
			bad("query %q: metric %q is not one the agent emits", u.query, n)
		}
	}
	// A document holds every metric of its node, time and label set: aggregating another
	// metric than the one selected would show it only where both were sent.
	if n, ok := strings.CutPrefix(u.mfield, "m."); ok && len(selected) > 0 && !slices.Contains(selected, n) {
		bad("query %q aggregates %s but selects %v", u.query, u.mfield, selected)
	}
	return errs
}

// metricNames returns the metric names a query selects.
func metricNames(q string) []string {
	var out []string
	for _, r := range metricRef.FindAllStringSubmatch(q, -1) {
		out = append(out, r[1])
	}
	return out
}

func readJSON(t testing.TB, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func globFiles(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s (%v)", pattern, err)
	}
	sort.Strings(files)
	return files
}
