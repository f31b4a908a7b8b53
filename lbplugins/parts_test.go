package lbplugins_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
)

// FuzzAppendJSONString checks the hand-written string encoder against encoding/json:
// valid JSON, and the same string once decoded, whatever the bytes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "wave-1", `a"b\c`, "tab\tnl\n\x00\x1f", "\xff\xfe", "\u2028\u2029", "日本語", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := lbplugins.AppendJSONString([]byte("x"), s)[1:]
		if !json.Valid(got) {
			t.Fatalf("invalid JSON for %q: %s", s, got)
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var a, b string
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("%q decodes to %q, encoding/json's to %q", s, a, b)
		}
	})
}

func TestPartsJSON(t *testing.T) {
	ps := lbplugins.PartsOf(lbplugins.Part{Name: "cpu", Value: 12.5}, lbplugins.Part{Name: "memory", Value: math.NaN()})
	data, err := json.Marshal(struct{ Parts lbplugins.Parts }{ps})
	require.NoError(t, err)
	require.JSONEq(t, `{"Parts":{"cpu":12.5,"memory":0}}`, string(data), "NaN, which JSON cannot carry, is 0")
	var full lbplugins.Parts
	for i := range lbplugins.MaxParts + 2 {
		full.Add("p", float64(i))
	}
	require.Equal(t, lbplugins.MaxParts, full.Len(), "parts past MaxParts are dropped")
}
