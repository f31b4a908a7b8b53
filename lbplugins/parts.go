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
	n     int
	exact bool
	p     [MaxParts]Part
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

// Exact keeps the parts as they are: Decide rounds parts to two decimals, too coarse
// for raw inputs such as utilisations (0.6834) or cores (0.004).
func (ps *Parts) Exact() { ps.exact = true }

func (ps *Parts) round() {
	if ps.exact {
		return
	}
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
	if c, ok := cents(v); ok {
		return appendCents(b, c)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// cents returns v in hundredths when v is the double nearest to a number of two
// decimals that strconv's shortest 'g' form writes without an exponent (0.01 ≤ |v| <
// 1e6, or 0): scores and parts are rounded to two decimals, and their shortest form is
// then those decimals, which appendCents writes without strconv's search.
func cents(v float64) (int64, bool) {
	if v == 0 {
		return 0, !math.Signbit(v) // strconv writes -0
	}
	if a := math.Abs(v); a < 0.01 || a >= 1e6 {
		return 0, false
	}
	n := math.Round(v * 100)
	if n/100 != v {
		return 0, false
	}
	return int64(n), true
}

// appendCents writes c hundredths as strconv's shortest form does: no trailing zeros,
// no point for whole numbers.
func appendCents(b []byte, c int64) []byte {
	if c < 0 {
		b = append(b, '-')
		c = -c
	}
	b = strconv.AppendInt(b, c/100, 10)
	switch frac := c % 100; {
	case frac == 0:
	case frac%10 == 0:
		b = append(b, '.', byte('0'+frac/10))
	default:
		b = append(b, '.', byte('0'+frac/10), byte('0'+frac%10))
	}
	return b
}
