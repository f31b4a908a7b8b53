package capture

import (
	"slices"
	"testing"
)

func TestEnumValues(t *testing.T) {
	for ctype, want := range map[string][]string{
		"enum('new','paid','it''s')": {"new", "paid", "it's"},
		"set('a','b,c','')":          {"a", "b,c", ""},
		"SET('x')":                   {"x"},
		"varchar(20)":                nil,
		"enum()":                     nil,
	} {
		if got := enumValues(ctype); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", ctype, got, want)
		}
	}
}
