package metric

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchBatch is a realistic agent batch: canonical names, a third of the points labelled.
func benchBatch(n int) Batch {
	names := []string{CPUUtil, Load1, MemUsedPct, NetRxBps, GoHeapBytes, WaveTPS, WaveLagSeconds, "disk.io.read_bps"}
	b := Batch{Node: "wave-3", TS: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC), IntervalS: 10, Points: make([]Point, n)}
	for i := range b.Points {
		p := Point{Name: names[i%len(names)], Value: float64(i) * 1.25}
		if i%3 == 0 {
			p.Labels = map[string]string{"instance": fmt.Sprintf("orders-%d", i), "device": "sda"}
		}
		b.Points[i] = p
	}
	return b
}

var benchSizes = []int{10, 100, 1000}

func BenchmarkEncode(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("points=%d", n), func(b *testing.B) {
			batch := benchBatch(n)
			out, err := Encode(batch)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := Decode(out); err != nil || !equalBatch(got, batch) {
				b.Fatalf("round trip failed: %v", err)
			}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("points=%d", n), func(b *testing.B) {
			batch := benchBatch(n)
			data, err := Encode(batch)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := Decode(data); err != nil || !equalBatch(got, batch) {
				b.Fatalf("decode gave a different batch: %v", err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		// A consumer's remembering Decoder, as the alarm and the judge decode: the names
		// and label sets of the batch before are the ones of this one.
		b.Run(fmt.Sprintf("remembering/points=%d", n), func(b *testing.B) {
			data := mustEncode(b, benchBatch(n))
			dec := NewDecoder()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeEncodingJSON is the yardstick the hand-written decoder is measured
// against: encoding/json with DisallowUnknownFields plus the same Validate.
func BenchmarkDecodeEncodingJSON(b *testing.B) {
	decode := func(data []byte) (Batch, error) {
		var bt Batch
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&bt); err != nil {
			return Batch{}, err
		}
		return bt, bt.Validate()
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("points=%d", n), func(b *testing.B) {
			batch := benchBatch(n)
			data, err := Encode(batch)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := decode(data); err != nil || !equalBatch(got, batch) {
				b.Fatalf("decode gave a different batch: %v", err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
