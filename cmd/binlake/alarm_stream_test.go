//go:build !agentonly

package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

var lineErr = regexp.MustCompile(`^s\.jsonl:[0-9]+: `)

// FuzzReadStream: any input either reads into valid batches in time order or fails with
// an error naming the file and the line; it never panics.
func FuzzReadStream(f *testing.F) {
	f.Add([]byte(`{"node":"wave-1","ts":"2026-11-29T14:00:10Z","interval_s":10,"points":[{"name":"cpu.util","value":1}]}` + "\n" +
		`{"node":"wave-2","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[]}`))
	f.Add([]byte("\n\n  \n"))
	f.Add([]byte(`{"node":"wave-1"}` + "\n"))
	f.Add([]byte(`{"node":"a","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[{"name":"x","value":1,"labels":{"k":"v"}}]}` + "\r\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, err := readStream(bytes.NewReader(data), "s.jsonl", time.Time{}, time.Time{})
		if err != nil {
			if !lineErr.MatchString(err.Error()) {
				t.Fatalf("error without the file and line: %v", err)
			}
			return
		}
		for i, b := range bs {
			if verr := b.Validate(); verr != nil {
				t.Fatalf("batch %d read but invalid: %v", i, verr)
			}
			if i > 0 && b.TS.Before(bs[i-1].TS) {
				t.Fatalf("batch %d out of time order", i)
			}
		}
	})
}

// A line longer than the largest batch is refused by its number, before it is decoded;
// one of exactly that size is read.
func TestReadStreamLineLimit(t *testing.T) {
	head := `{"node":"wave-1","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[{"name":"cpu.util","value":1,"labels":{"k":"`
	tail := `"}}]}`
	fill := func(n int) string { return head + strings.Repeat("v", n-len(head)-len(tail)) + tail }
	_, err := readStream(strings.NewReader("\n"+fill(metric.MaxBatchBytes+1)+"\n"), "s.jsonl", time.Time{}, time.Time{})
	if err == nil || !strings.HasPrefix(err.Error(), "s.jsonl:2: a line longer than 1048576 bytes") {
		t.Fatalf("over the limit: %v", err)
	}
	// At the limit the line is read and decoded: here the label value is too long, which
	// the decoder says.
	_, err = readStream(strings.NewReader(fill(metric.MaxBatchBytes)), "s.jsonl", time.Time{}, time.Time{})
	if err == nil || !strings.HasPrefix(err.Error(), "s.jsonl:1: invalid metric batch") {
		t.Fatalf("at the limit: %v", err)
	}
}
