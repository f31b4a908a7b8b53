package metric

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/binlake/binlake/internal/jsonenc"
)

// Encode validates b and returns its JSON form, with ts in RFC 3339 UTC and labels in key
// order, so equal batches encode to equal bytes.
func Encode(b Batch) ([]byte, error) {
	buf, err := AppendEncode(make([]byte, 0, 96+len(b.Points)*40), b)
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// AppendEncode is Encode appending to buf, for senders that reuse one buffer.
func AppendEncode(buf []byte, b Batch) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return buf, err
	}
	start := len(buf)
	buf = append(buf, `{"node":`...)
	buf = jsonenc.AppendString(buf, b.Node)
	buf = append(buf, `,"ts":"`...)
	buf = b.TS.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","interval_s":`...)
	buf = AppendFloat(buf, b.IntervalS)
	buf = append(buf, `,"points":[`...)
	var keyArr [8]string
	keys := keyArr[:0]
	for i := range b.Points {
		p := &b.Points[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"name":`...)
		buf = jsonenc.AppendString(buf, p.Name)
		buf = append(buf, `,"value":`...)
		buf = AppendFloat(buf, p.Value)
		if len(p.Labels) > 0 {
			keys = keys[:0]
			for k := range p.Labels {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			buf = append(buf, `,"labels":{`...)
			for j, k := range keys {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = jsonenc.AppendString(buf, k)
				buf = append(buf, ':')
				buf = jsonenc.AppendString(buf, p.Labels[k])
			}
			buf = append(buf, '}')
		}
		buf = append(buf, '}')
	}
	buf = append(buf, "]}"...)
	if n := len(buf) - start; n > MaxBatchBytes {
		return buf[:start], fmt.Errorf("%w: %d bytes encoded, more than %d", ErrTooLarge, n, MaxBatchBytes)
	}
	return buf, nil
}

// AppendFloat appends a value as Encode writes it, for encoders of the same form: like
// encoding/json, plain decimals in the usual range, exponent notation outside it; always
// the shortest text that parses back to the same float.
func AppendFloat(buf []byte, f float64) []byte {
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(buf, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(buf, f, 'f', -1, 64)
}
