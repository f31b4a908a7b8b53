package lbplugins_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
)

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

// TestAppendJSONFloatAsStrconv: the two-decimal fast path writes exactly what strconv's
// shortest form writes, for every hundredth below 10,000 and their negatives, around the
// fast path's bounds, and for values it must leave to strconv.
func TestAppendJSONFloatAsStrconv(t *testing.T) {
	check := func(v float64) {
		t.Helper()
		got := string(lbplugins.AppendJSONFloat(nil, v))
		want := strconv.FormatFloat(v, 'g', -1, 64)
		if got != want {
			t.Fatalf("AppendJSONFloat(%v) = %s, want %s", v, got, want)
		}
	}
	for n := -1_000_000; n <= 1_000_000; n++ {
		check(math.Round(float64(n)) / 100)
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 0.01, 0.009, 0.001, 1e-5, 999999.99, 1e6, 1e6 + 0.01, 123456.78, 1e21,
		1.0 / 3, 2.0 / 3, 0.1 + 0.2, 12.345, 99.995, -0.01, -999999.99, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		check(v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		check((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(14)-6)))
	}
}
