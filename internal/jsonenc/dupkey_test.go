package jsonenc

import (
	"encoding/json"
	"testing"
)

func TestDuplicateKey(t *testing.T) {
	for _, tc := range []struct {
		in, path string
		found    bool
	}{
		{`{"a":1,"b":2}`, "", false},
		{`{"a":1,"a":2}`, "a", true},
		{`{"a":{"x":1,"y":{"x":2}},"b":[{"n":1},{"n":2,"n":3}]}`, "b[1].n", true},
		{`{"waves":[{"node":"a","alive":true,"node":"b"}]}`, "waves[0].node", true},
		{`[{"a":1},{"a":1}]`, "", false}, // one name in two objects
		{`{"a":"x","A":"y"}`, "", false}, // names are case-sensitive
		{`{"a":1,"a"`, "", false},        // not JSON: its decoder names the fault
		{`{"":1,"":2}`, "", true},
		{`"a:b"`, "", false},
		{``, "", false},
	} {
		path, found := DuplicateKey([]byte(tc.in))
		if path != tc.path || found != tc.found {
			t.Errorf("DuplicateKey(%s) = %q, %v; want %q, %v", tc.in, path, found, tc.path, tc.found)
		}
	}
}

func FuzzDuplicateKey(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c":2,"c":3}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, found := DuplicateKey(b); found && !json.Valid(b) {
			t.Fatalf("a duplicate found in %q, which is not JSON", b)
		}
	})
}
