package lbplugins_test

import (
	"encoding/json"
	"math"
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
