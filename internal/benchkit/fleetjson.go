package benchkit

import (
	"time"

	"github.com/binlake/binlake/internal/jsonenc"
	"github.com/binlake/binlake/internal/metric"
)

// fleetJSON holds the parts of the fleet's batches that never change, encoded once.
type fleetJSON struct {
	nodes  [][]byte // {"node":"bench-00000","ts":"
	points []pointJSON
}

// pointJSON is a batch's k-th point around its value: {"name":…,"value": and the rest.
type pointJSON struct{ head, tail []byte }

func (f *Fleet) encodeParts(maxPoints int) {
	f.json.nodes = make([][]byte, len(f.nodes))
	for i, n := range f.nodes {
		b := jsonenc.AppendString([]byte(`{"node":`), n.id)
		f.json.nodes[i] = append(b, `,"ts":"`...)
	}
	f.json.points = make([]pointJSON, max(maxPoints, len(NodeMetrics)))
	for k := range f.json.points {
		name, labels := f.series(k)
		head := jsonenc.AppendString([]byte(`{"name":`), name)
		tail := []byte{'}'}
		if labels != nil {
			// The fleet's label sets have one key: no order to keep.
			tail = []byte(`,"labels":{`)
			for key, v := range labels {
				tail = jsonenc.AppendString(tail, key)
				tail = append(tail, ':')
				tail = jsonenc.AppendString(tail, v)
			}
			tail = append(tail, "}}"...)
		}
		f.json.points[k] = pointJSON{head: append(head, `,"value":`...), tail: tail}
	}
}

// Override replaces the value of a batch's point number Point.
type Override struct {
	Point int
	Value float64
}

// AppendJSON appends node i's batch number tick, as Batch builds it, in the bytes
// metric.Encode gives it, with the overrides' values in place. It builds no Batch and
// checks nothing, so a load generator spends its CPU on the values and the time:
// building, validating and encoding a Batch took more of the alarm bench's CPU than its
// Kafka producer. size is at most the fleet's maxPoints.
func (f *Fleet) AppendJSON(buf []byte, i, tick, size int, ts time.Time, interval time.Duration, overrides ...Override) []byte {
	buf = append(buf, f.json.nodes[i]...)
	buf = ts.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","interval_s":`...)
	buf = metric.AppendFloat(buf, interval.Seconds())
	buf = append(buf, `,"points":[`...)
	w := f.wave(i, tick)
	for k := range size {
		if k > 0 {
			buf = append(buf, ',')
		}
		p := &f.json.points[k]
		buf = append(buf, p.head...)
		v := f.value(i, w, k)
		for _, o := range overrides {
			if o.Point == k {
				v = o.Value
			}
		}
		buf = metric.AppendFloat(buf, v)
		buf = append(buf, p.tail...)
	}
	return append(buf, "]}"...)
}
