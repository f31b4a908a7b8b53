package store

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// TestDecodedPointsAreStorable: every point of a batch the metric rules accept is one
// the store accepts (the judge stores decoded points without validating them again),
// with sizes up to each of the batch's limits: 32 labels, 1,024-byte label values,
// 128-byte label keys and names, 255-byte node names. One past a limit, the batch itself
// is refused.
func TestDecodedPointsAreStorable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pick := func(edges ...int) int { return edges[r.IntN(len(edges))] }
	accepted, refused := 0, 0
	for range 5000 {
		// Every size at or under its limit, then at most one of them one past it.
		nLabels := pick(0, 1, metric.MaxLabels-1, metric.MaxLabels)
		keyLen, valueLen := pick(1, metric.MaxLabelKeyLen), pick(0, 1, metric.MaxLabelValueLen)
		nodeLen, nameLen := pick(1, metric.MaxNodeLen), pick(3, metric.MaxNameLen)
		switch r.IntN(6) {
		case 0:
			nLabels = metric.MaxLabels + 1
		case 1:
			keyLen = metric.MaxLabelKeyLen + 1
		case 2:
			valueLen = metric.MaxLabelValueLen + 1
		case 3:
			nodeLen = metric.MaxNodeLen + 1
		case 4:
			nameLen = metric.MaxNameLen + 1
		}
		labels := map[string]string{}
		for k := range nLabels {
			key := fmt.Sprintf("k%03d", k)
			labels[key+strings.Repeat("x", max(keyLen-len(key), 0))] = strings.Repeat("v", valueLen)
		}
		node := strings.Repeat("n", nodeLen)
		name := "m." + strings.Repeat("x", nameLen-2)
		b := metric.Batch{Node: node, TS: ts, IntervalS: 10, Points: []metric.Point{{Name: name, Labels: labels, Value: r.Float64()}}}
		if b.Validate() != nil {
			refused++
			continue
		}
		accepted++
		p := Point{Node: node, Name: name, Labels: labels, TS: ts, Value: b.Points[0].Value}
		if err := p.Validate(); err != nil {
			t.Fatalf("a point of a valid batch is not storable: %v (labels %d, node %d bytes, name %d bytes)", err, len(labels), len(node), len(name))
		}
	}
	if accepted < 500 || refused < 500 {
		t.Fatalf("%d batches accepted, %d refused: the cases do not reach both sides of the limits", accepted, refused)
	}
}
