package elastic

import (
	"slices"
	"testing"
)

// The engine's reasons, as Elasticsearch 7.17 words them (the first three seen from the
// test engine).
func TestFieldsOfReasons(t *testing.T) {
	for reason, want := range map[string][]string{
		"Could not dynamically add mapping for field [zz.conf.sub]. Existing mapping for [m.zz.conf] must be of type object but found [double].": {"zz.conf.sub", "zz.conf"},
		"object mapping for [m.zz] tried to parse field [zz] as object, but found a concrete value":                                              {"zz", "zz"},
		"can't merge a non object mapping [m.zz.conf] with an object mapping":                                                                    {"zz.conf"},
		"failed to parse field [m.cpu.util] of type [double] in document with id 'x'. Preview of field's value: 'a'":                             {"cpu.util"},
		"mapping set to strict, dynamic introduction of [other] within [_doc] is not allowed":                                                    nil,
		"unterminated [m.x": nil,
	} {
		if got := fieldsOf(reason); !slices.Equal(got, want) {
			t.Errorf("fieldsOf(%q) = %q, want %q", reason, got, want)
		}
	}
}

func names(d *document) []string {
	var n []string
	for _, m := range d.metrics {
		n = append(n, m.name)
	}
	return n
}

func TestTrimTakesOutOnlyTheNamedMetrics(t *testing.T) {
	d := &document{metrics: []metric{{"cpu.util", 7}, {"zz.conf.sub", 1}, {"mem.used_pct", 55}, {"zz", 2}}}
	if !d.trim(400, "mapper_parsing_exception", "Could not dynamically add mapping for field [zz.conf.sub]. Existing mapping for [m.zz.conf] must be of type object but found [double].", "") {
		t.Fatal("not trimmed")
	}
	if got := names(d); !slices.Equal(got, []string{"cpu.util", "mem.used_pct", "zz"}) {
		t.Fatalf("kept %q", got)
	}
	// Only a related name: "zz.conf" named, "zz.conf.sub" sent.
	d2 := &document{metrics: []metric{{"cpu.util", 7}, {"zz.conf.sub", 1}}}
	if !d2.trim(400, "illegal_argument_exception", "can't merge a non object mapping [m.zz.conf] with an object mapping") || !slices.Equal(names(d2), []string{"cpu.util"}) {
		t.Fatalf("related: kept %q", names(d2))
	}
	if len(d2.refused) != 1 || d2.refused[0].name != "zz.conf.sub" {
		t.Fatalf("refused %+v", d2.refused)
	}
	for _, c := range []struct {
		typ, reason string
		metrics     []metric
	}{
		{"mapper_parsing_exception", "object mapping for [m.zz] tried to parse field [zz] as object", []metric{{"zz", 1}}},                                                                                       // nothing would be left
		{"mapper_parsing_exception", "failed to parse", []metric{{"cpu.util", 1}, {"zz", 1}}},                                                                                                                    // names no field
		{"mapper_parsing_exception", "failed to parse field [m.other]", []metric{{"cpu.util", 1}, {"zz", 1}}},                                                                                                    // names none of d's
		{"index_closed_exception", "closed [m.zz]", []metric{{"cpu.util", 1}, {"zz", 1}}},                                                                                                                        // not a field's fault
		{"mapper_parsing_exception", "Could not dynamically add mapping for field [zz.x]. Existing mapping for [labels.zz] must be of type object but found [keyword].", []metric{{"cpu.util", 1}, {"zz.x", 1}}}, // a label's
	} {
		d := &document{metrics: c.metrics}
		if d.trim(400, c.typ, c.reason) || len(d.metrics) != len(c.metrics) {
			t.Errorf("%s %q: trimmed to %q, want the document refused whole", c.typ, c.reason, names(d))
		}
	}
	// Bounded: after maxTrims the document is refused whole.
	d3 := &document{}
	for i := range maxTrims + 2 {
		d3.metrics = append(d3.metrics, metric{"x" + string(rune('a'+i)), 1})
	}
	for i := range maxTrims + 1 {
		name := d3.metrics[0].name
		ok := d3.trim(400, "mapper_parsing_exception", "failed to parse field [m."+name+"]")
		if ok != (i < maxTrims) {
			t.Fatalf("trim %d: %v", i+1, ok)
		}
	}
}
