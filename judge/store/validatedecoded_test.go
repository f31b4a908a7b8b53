package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// TestValidateDecodedAsValidate: for points of batches the wire rules accept, the short
// check gives Validate's answer, with the sizes around both sets of limits (label counts
// up to the wire's 32, label values up to its 1,024 bytes, the longest node and name).
func TestValidateDecodedAsValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	counts := []int{0, 1, MaxLabels - 1, MaxLabels, MaxLabels + 1, metric.MaxLabels}
	fits := []int{0, 1, MaxNameLen - 1, MaxNameLen}        // label value lengths the store takes
	long := []int{MaxNameLen + 1, metric.MaxLabelValueLen} // and ones only the wire takes
	checked, refused := 0, 0
	for range 5000 {
		labels := map[string]string{}
		n := counts[r.IntN(len(counts))]
		for k := range n {
			labels[fmt.Sprintf("k%d", k)] = strings.Repeat("v", fits[r.IntN(len(fits))])
		}
		if n > 0 && r.IntN(2) == 0 { // one value too long for the store
			labels[fmt.Sprintf("k%d", r.IntN(n))] = strings.Repeat("v", long[r.IntN(len(long))])
		}
		if len(labels) == 0 {
			labels = nil
		}
		node := strings.Repeat("n", 1+r.IntN(metric.MaxNodeLen))
		name := "m." + strings.Repeat("x", r.IntN(metric.MaxNameLen-2))
		b := metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{{Name: name, Labels: labels, Value: r.Float64()}}}
		if b.Validate() != nil {
			continue
		}
		p := Point{Node: node, Name: name, Labels: labels, TS: ts, Value: b.Points[0].Value}
		// Validate names the first bad label it meets, in map order: compare the verdicts.
		full, short := p.Validate(), p.ValidateDecoded()
		if (full == nil) != (short == nil) || (short != nil && !errors.Is(short, ErrInvalid)) {
			t.Fatalf("labels %d, longest value %d: Validate %v, ValidateDecoded %v", len(labels), longest(labels), full, short)
		}
		checked++
		if full != nil {
			refused++
		}
	}
	if checked < 1000 || refused == 0 || refused == checked {
		t.Fatalf("checked %d points, %d refused: the cases do not cover both answers", checked, refused)
	}
}

func longest(m map[string]string) int {
	n := 0
	for _, v := range m {
		n = max(n, len(v))
	}
	return n
}
