package sqlite

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestChunkRoundTrip(t *testing.T) {
	const bucket = 5_000_000
	start := int64(bucket * bucketMS)
	for _, samples := range [][]sample{
		nil,
		{{start, 1}},
		{{start + 1, -2.5}, {start + 10_000, 0}, {start + bucketMS - 1, math.MaxFloat64}},
	} {
		data := encodeChunk(nil, bucket, samples)
		got, err := decodeChunk(nil, bucket, data)
		if err != nil {
			t.Fatalf("decode %v: %v", samples, err)
		}
		if !slices.Equal(got, samples) {
			t.Fatalf("decoded %v, want %v", got, samples)
		}
	}
}

func TestDecodeChunkRefusesCorruptData(t *testing.T) {
	const bucket = 7
	start := int64(bucket * bucketMS)
	good := encodeChunk(nil, bucket, []sample{{start + 5, 1}, {start + 9, 2}})
	for name, data := range map[string][]byte{
		"truncated value":   good[:len(good)-1],
		"truncated varint":  {0x80},
		"repeated time":     encodeChunk(nil, bucket, []sample{{start + 5, 1}, {start + 5, 2}}),
		"leaves the bucket": encodeChunk(nil, bucket, []sample{{start + bucketMS, 1}}),
		"NaN":               encodeChunk(nil, bucket, []sample{{start, math.NaN()}}),
	} {
		if _, err := decodeChunk(nil, bucket, data); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: %v, want errCorrupt", name, err)
		}
	}
}

func TestMergeSamples(t *testing.T) {
	old := []sample{{10, 1}, {20, 2}, {30, 3}}
	got := mergeSamples(slices.Clone(old), []sample{{25, 9}, {20, 7}, {5, 0}, {20, 8}})
	want := []sample{{5, 0}, {10, 1}, {20, 8}, {25, 9}, {30, 3}}
	if !slices.Equal(got, want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
}

// FuzzDecodeChunk: arbitrary bytes decode or fail cleanly, and whatever decodes encodes
// back to the same bytes.
func FuzzDecodeChunk(f *testing.F) {
	f.Add(int64(3), encodeChunk(nil, 3, []sample{{3 * bucketMS, 1}, {3*bucketMS + 7, 2}}))
	f.Add(int64(0), []byte{0x80, 0x80, 0x80})
	f.Add(int64(1), []byte{})
	f.Fuzz(func(t *testing.T, bucket int64, data []byte) {
		if bucket < 0 || bucket > math.MaxInt64/bucketMS-1 {
			return
		}
		got, err := decodeChunk(nil, bucket, data)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		if again := encodeChunk(nil, bucket, got); !slices.Equal(again, data) {
			// Varints have non-minimal encodings: compare what they mean instead.
			back, err := decodeChunk(nil, bucket, again)
			if err != nil || !slices.Equal(back, got) {
				t.Fatalf("re-encoded %x decodes to %v, %v; want %v", again, back, err, got)
			}
		}
	})
}
