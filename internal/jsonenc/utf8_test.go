package jsonenc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		in    string
		path  string
		found bool
	}{
		{`{"instance":"orders","exclude":["a","b"]}`, "", false},
		{"{\"instance\":\"or\xffders\"}", "instance", true},
		{"{\"instance\":\"ok\",\"exclude\":[\"a\",\"b\xc3\"]}", "exclude[1]", true},
		{"{\"instances\":[{\"id\":\"a\"},{\"id\":\"b\",\"node\":\"\xfe\"}]}", "instances[1].node", true},
		{"{\"k\xff\":1}", "k\ufffd", true},
		{"{\"s\":\"\u00e9\\u00e9\"}", "", false},
		{"\"\xff\"", "", true},
		{"{\"a\":\"\xff", "", false}, // not JSON: its decoder says so
	} {
		path, found := InvalidUTF8([]byte(tc.in))
		require.Equal(t, tc.found, found, "%q", tc.in)
		require.Equal(t, tc.path, path, "%q", tc.in)
	}
}

func FuzzInvalidUTF8(f *testing.F) {
	f.Add([]byte("{\"a\":[\"\xff\"]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, found := InvalidUTF8(b); found && !json.Valid(b) {
			t.Fatalf("found in invalid JSON %q", b)
		}
	})
}
