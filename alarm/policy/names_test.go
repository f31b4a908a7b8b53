package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A policy on a misspelt metric is named with its metric's line and the known name it
// was most likely meant to be; a known metric and a nodata policy without one are not.
func TestUnknownMetrics(t *testing.T) {
	pols, err := Parse(strings.NewReader(`policies:
  - name: cpu-ok
    metric: cpu.util
    condition: "last > 90"
    severity: P2
    channels: [c]
  - name: cpu-typo
    condition: "last > 90"
    metric: cpu.utl
    severity: P2
    channels: [c]
  - name: dead
    nodata: 3
    severity: P2
    channels: [c]
  - name: custom
    metric: shop.checkout_errors
    condition: "last > 0"
    severity: P2
    channels: [c]
`), "p.yaml")
	require.NoError(t, err)
	got := UnknownMetrics(pols, []string{"mem.used_pct", "cpu.util", "cpu.cores", "wave.lag_s"})
	require.Equal(t, []UnknownMetric{
		{Policy: "cpu-typo", Line: 9, Metric: "cpu.utl", Closest: "cpu.util"},
		{Policy: "custom", Line: 17, Metric: "shop.checkout_errors"},
	}, got)
	require.Equal(t, `p.yaml:9: policy "cpu-typo" watches metric "cpu.utl", which is not a known metric: the policy can never fire; did you mean cpu.util?`,
		got[0].Message("p.yaml", "a known metric"))
	require.Equal(t, `p.yaml:17: policy "custom" watches metric "shop.checkout_errors", which is not a known metric: the policy can never fire`,
		got[1].Message("p.yaml", "a known metric"))
}

func TestClosest(t *testing.T) {
	names := []string{"cpu.cores", "cpu.util", "disk.used_pct", "mem.used_pct", "wave.lag_s", "wave.tps"}
	for _, tc := range []struct{ in, want string }{
		{"cpu.utl", "cpu.util"},         // a letter left out
		{"cpu.uitl", "cpu.util"},        // two swapped
		{"cpu_util", "cpu.util"},        // another separator
		{"wave.lag", "wave.lag_s"},      // the unit left out
		{"mem.usedpct", "mem.used_pct"}, // one left out
		{"wave.tsp", "wave.tps"},
		{"shop.orders", ""}, // nothing near: no guess
		{"cpu", ""},
	} {
		require.Equal(t, tc.want, Closest(tc.in, names), tc.in)
	}
	require.Equal(t, 1, editDistance("ab", "ba", 10), "a swap is one edit")
	require.Equal(t, 3, editDistance("kitten", "sitting", 10))
	require.Equal(t, 2, editDistance("a", "abcdef", 2), "capped at the bound")
}
