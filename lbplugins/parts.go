package lbplugins

import (
	"math"
	"strconv"

	"github.com/binlake/binlake/internal/jsonenc"
)

// MaxParts is the most parts a score can have (balanced: six resources and the stddev).
const MaxParts = 8

// Part is one named contribution to a score, or a raw input that explains one.
type Part struct {
	Name  string
	Value float64
}

// Parts are a score's parts in a fixed-size array, so that explaining a score allocates
// nothing. They encode as a JSON object in the order they were added.
type Parts struct {
	n int
	p [MaxParts]Part
}

// PartsOf builds Parts from name/value pairs (tests, plugins with fixed parts).
func PartsOf(kv ...Part) Parts {
	var ps Parts
	for _, p := range kv {
		ps.Add(p.Name, p.Value)
	}
	return ps
}

// Add appends a part; parts past MaxParts are dropped (a plugin bug its tests catch).
func (ps *Parts) Add(name string, v float64) {
	if ps.n < MaxParts {
		ps.p[ps.n] = Part{Name: name, Value: v}
		ps.n++
	}
}

// Len is the number of parts.
func (ps *Parts) Len() int { return ps.n }

// Scale multiplies every part by f (p2c's 0.99).
func (ps *Parts) Scale(f float64) {
	for i := range ps.n {
		ps.p[i].Value *= f
	}
}

// Map returns the parts as a map (tests, the status page).
func (ps *Parts) Map() map[string]float64 {
	m := make(map[string]float64, ps.n)
	for i := range ps.n {
		m[ps.p[i].Name] = ps.p[i].Value
	}
	return m
}

func (ps *Parts) round() {
	for i := range ps.n {
		ps.p[i].Value = round2(ps.p[i].Value)
	}
}

// AppendJSON appends the parts as a JSON object.
func (ps *Parts) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	for i := range ps.n {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, ps.p[i].Name)
		b = append(b, ':')
		b = AppendJSONFloat(b, ps.p[i].Value)
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler.
func (ps Parts) MarshalJSON() ([]byte, error) { return ps.AppendJSON(nil), nil }

// AppendJSONFloat appends a finite float in JSON's shortest form; NaN and infinities,
// which JSON cannot carry, become 0.
func AppendJSONFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
