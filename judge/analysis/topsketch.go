package analysis

import (
	"math"

	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

// Sketch parameters. DDSketch (DataDog/sketches-go) was chosen over a t-digest because
// its error bound is relative to the value (1 % here) at every quantile, not only near
// the tails, it is mergeable, and the collapsing store bounds its memory: 2,048 bins of
// 1 % cover about 17 orders of magnitude, from bytes per second to TPS and percentages.
const (
	SketchAccuracy = 0.01
	sketchBins     = 2048
)

// sketchMapping is shared by every sketch (it is immutable). The cubically interpolated
// mapping keeps the 1 % guarantee without a math.Log per sample, for about 1 % more bins.
var sketchMapping = func() *mapping.CubicallyInterpolatedMapping {
	m, err := mapping.NewCubicallyInterpolatedMapping(SketchAccuracy)
	if err != nil {
		panic(err) // constant, valid accuracy
	}
	return m
}()

// topSketch is a DDSketch, built from sketches-go's mapping and dense stores, that keys
// values in descending order. A dense store finds a rank by summing its bins from the
// lowest key, so ddsketch.DDSketch reads a p95 by summing nearly every bin (hundreds, a
// microsecond and more); here the p95 is a few bins from the start, cheap enough to read
// on every view. Like ddsketch's CollapsingLowest sketches, it collapses the lowest values
// when a store would pass sketchBins.
type topSketch struct {
	pos  store.CollapsingHighestDenseStore  // v > 0 under key -index(v)
	neg  *store.CollapsingHighestDenseStore // v < 0 under key index(-v); nil until one comes
	zero float64                            // values too close to 0 to index
}

func newTopSketch() topSketch {
	return topSketch{pos: *store.NewCollapsingHighestDenseStore(sketchBins)}
}

// add takes one value; NaN and values beyond ±MaxIndexableValue (1e308) are ignored.
func (t *topSketch) add(v float64) {
	m := sketchMapping
	switch {
	case v > m.MinIndexableValue():
		if v <= m.MaxIndexableValue() {
			t.pos.Add(-m.Index(v))
		}
	case v < -m.MinIndexableValue():
		if v >= -m.MaxIndexableValue() {
			if t.neg == nil {
				t.neg = store.NewCollapsingHighestDenseStore(sketchBins)
			}
			t.neg.Add(m.Index(-v))
		}
	case !math.IsNaN(v):
		t.zero++
	}
}

func (t *topSketch) clear() {
	t.pos.Clear() // keeps the bins' memory for the next hour
	if t.neg != nil {
		t.neg.Clear()
	}
	t.zero = 0
}

// quantile returns the value at q (0–1), within SketchAccuracy of a value ranked at q;
// false when the sketch is empty.
func (t *topSketch) quantile(q float64) (float64, bool) {
	pos, neg := t.pos.TotalCount(), 0.0
	if t.neg != nil {
		neg = t.neg.TotalCount()
	}
	count := pos + t.zero + neg
	if count == 0 {
		return 0, false
	}
	// The rank counted from the top. The explicit conversion keeps the compiler from
	// fusing a multiply-add, which would round differently across architectures.
	rank := float64((1 - q) * (count - 1))
	switch {
	case rank < pos:
		return sketchMapping.Value(-t.pos.KeyAtRank(rank)), true
	case rank < pos+t.zero:
		return 0, true
	default:
		return -sketchMapping.Value(t.neg.KeyAtRank(rank - pos - t.zero)), true
	}
}
