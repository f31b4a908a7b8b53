package sqlite

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// bucketMS is the time span of one chunk: a series' points of one 5-minute bucket are one
// row, 30 points at the agent's usual 10 s (about 300 bytes), 300 at 1 s.
const bucketMS = 5 * 60 * 1000

// bucketOf is the bucket of a Unix-millisecond time (non-negative: Point.Validate
// rejects pre-1970 times).
func bucketOf(ms int64) int64 { return ms / bucketMS }

// sample is one point of a series.
type sample struct {
	ms int64
	v  float64
}

// encodeChunk appends the samples of one series and bucket, sorted by time with distinct
// times, to dst: per sample the uvarint distance in ms from the previous one (the first
// from the bucket's start), then the value's IEEE 754 bits, little-endian.
func encodeChunk(dst []byte, bucket int64, samples []sample) []byte {
	prev := bucket * bucketMS
	for _, s := range samples {
		dst = binary.AppendUvarint(dst, uint64(s.ms-prev))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.v))
		prev = s.ms
	}
	return dst
}

var errCorrupt = errors.New("corrupt chunk")

// decodeChunk appends the samples of a chunk of bucket to dst. It refuses, wrapping
// errCorrupt, data that encodeChunk cannot have written: truncated, times out of order
// or outside the bucket, values that are not finite.
func decodeChunk(dst []sample, bucket int64, data []byte) ([]sample, error) {
	start := bucket * bucketMS
	prev := start
	for i := 0; len(data) > 0; i++ {
		d, n := binary.Uvarint(data)
		if n <= 0 || len(data) < n+8 {
			return dst, fmt.Errorf("%w: bucket %d: sample %d truncated", errCorrupt, bucket, i)
		}
		if (i > 0 && d == 0) || d >= bucketMS || prev+int64(d) >= start+bucketMS {
			return dst, fmt.Errorf("%w: bucket %d: sample %d: time step %d ms leaves the bucket or repeats a time", errCorrupt, bucket, i, d)
		}
		prev += int64(d)
		v := math.Float64frombits(binary.LittleEndian.Uint64(data[n:]))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst, fmt.Errorf("%w: bucket %d: sample %d: value %v", errCorrupt, bucket, i, v)
		}
		dst = append(dst, sample{prev, v})
		data = data[n+8:]
	}
	return dst, nil
}

// mergeSamples returns old (sorted, distinct times) with add applied: a sample of add
// replaces the one of old with the same time, the last of add's wins among its own.
func mergeSamples(old, add []sample) []sample {
	out := append(old, add...)
	// Stable: among equal times the later-appended, i.e. newer, sample comes last.
	slices.SortStableFunc(out, func(a, b sample) int { return cmp.Compare(a.ms, b.ms) })
	w := 0
	for i := range out {
		if w > 0 && out[w-1].ms == out[i].ms {
			out[w-1] = out[i]
			continue
		}
		out[w] = out[i]
		w++
	}
	return out[:w]
}
