package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The OpenAPI document's schemas name the fields the judge sends and takes: each
// schema's properties are exactly the JSON fields of its Go type (embedded structs
// included), so that a field added to a type without its description fails here. (The
// rebalance answer once carried model, waves and peak_before unknown to the document.)
func TestSchemasMatchTheTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"PlacementRequest": PlacementRequest{}, "WorkHint": WorkHint{}, "Work": Work{}, "ExpectedWork": ExpectedWork{},
		"Reservation": Reservation{}, "PlacementResponse": PlacementAnswer{}, "Score": Score{},
		"RebalanceRequest": RebalanceRequest{}, "RebalanceWave": RebalanceWave{}, "RebalanceInstance": RebalanceInstance{},
		"InstanceCost": InstanceCost{}, "RebalanceGoals": RebalanceGoals{}, "RebalanceMove": Move{},
		"RebalanceAnswer": RebalanceAnswer{}, "WaveLoad": WaveLoad{}, "NodeLoad": NodeLoad{}, "Prices": Prices{},
		"MetricNames": MetricNames{},
	} {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s: missing", name)
			continue
		}
		var documented []string
		for p := range s.Properties {
			documented = append(documented, p)
		}
		slices.Sort(documented)
		if sent := jsonFields(reflect.TypeOf(v)); !slices.Equal(sent, documented) {
			t.Errorf("schema %s has %v; %T has %v", name, documented, v, sent)
		}
	}
}

// jsonFields are the JSON field names of struct type t, sorted.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
