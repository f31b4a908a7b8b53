package dashboards

import (
	"strings"
	"testing"
)

// TestCheckUseCatches shows that the checks the dashboard tests rely on fail on the
// mistakes they exist for.
func TestCheckUseCatches(t *testing.T) {
	m := judgeMapping(t)
	good := use{where: "w", query: `_exists_:m.cpu.util AND labels_key:"" AND node:$node`, index: m.pattern,
		metric: "avg", mfield: "m.cpu.util",
		fields: []fieldUse{{"m.cpu.util", numeric, "metric avg"}, {"node", keyword, "terms"}, {"ts", date, "date_histogram"}}}
	tests := []struct {
		name string
		edit func(*use)
		want string // substring of the one error; "" for none
	}{
		{"good", func(*use) {}, ""},
		{"other index", func(u *use) { u.index = "metrics-*" }, `reads index "metrics-*"`},
		{"unknown metric", func(u *use) {
			u.query, u.mfield, u.fields[0].field = `_exists_:m.cpu.usage`, "m.cpu.usage", "m.cpu.usage"
		}, `metric "cpu.usage" is not one the agent emits`},
		{"another metric aggregated", func(u *use) { u.mfield, u.fields[0].field = "m.load.1", "m.load.1" }, `aggregates m.load.1 but selects [cpu.util]`},
		{"no metric", func(u *use) { u.query = `node:$node` }, "selects no metric"},
		{"unknown query field", func(u *use) { u.query = `_exists_:m.cpu.util AND host:a` }, `query field "host" is not in`},
		{"unknown exists field", func(u *use) { u.query = `_exists_:m.cpu.util AND _exists_:tags` }, `_exists_ field "tags" is not in`},
		{"unknown label", func(u *use) { u.query = `_exists_:m.cpu.util AND labels.zone:a` }, `no collector emits label "zone"`},
		{"avg over keyword", func(u *use) { u.fields[0].field = "node" }, `"node" is mapped as keyword`},
		{"terms over number", func(u *use) { u.fields[1].field = "m.cpu.util" }, `"m.cpu.util" is mapped as double`},
		{"time field not a date", func(u *use) { u.fields[2].field = "hour" }, `"hour" is mapped as byte`},
		{"labels object itself", func(u *use) { u.fields[1].field = "labels" }, `terms field "labels" is not in`},
		{"metrics object itself", func(u *use) { u.fields[0].field = "m" }, `metric avg field "m" is not in`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := good
			u.fields = append([]fieldUse(nil), good.fields...)
			tc.edit(&u)
			errs := checkUse(m, u, emittedNames, emittedLabels)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

// TestKibanaUsesCatches shows that a dangling reference and a foreign index pattern are found.
func TestKibanaUsesCatches(t *testing.T) {
	objs := loadKibana(t)
	for file, list := range objs {
		// A dashboard whose panel reference points at a visualization not in the file.
		broken := append([]kibanaObject(nil), list...)
		for i, o := range broken {
			if o.Type == "dashboard" {
				o.References = append([]kibanaReference(nil), o.References...)
				o.References[0].ID = "missing"
				broken[i] = o
				break
			}
		}
		if _, errs := kibanaUses(file, broken); !containsErr(errs, `→ visualization missing is not in the file`) {
			t.Errorf("dangling panel reference not reported: %v", errs)
		}
		m := judgeMapping(t)
		foreign := append([]kibanaObject(nil), list...)
		for i, o := range foreign {
			if o.Type == "index-pattern" {
				attrs := map[string]any{}
				for k, v := range o.Attributes {
					attrs[k] = v
				}
				attrs["title"] = "logstash-*"
				o.Attributes = attrs
				foreign[i] = o
			}
		}
		uses, _ := kibanaUses(file, foreign)
		var errs []error
		for _, u := range uses {
			errs = append(errs, checkUse(m, u, emittedNames, emittedLabels)...)
		}
		if !containsErr(errs, `reads index "logstash-*"`) {
			t.Errorf("foreign index pattern not reported: %v", errs)
		}
	}
}

func containsErr(errs []error, sub string) bool {
	for _, err := range errs {
		if strings.Contains(err.Error(), sub) {
			return true
		}
	}
	return false
}
