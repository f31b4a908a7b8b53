//go:build !agentonly

package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

var lineErr = regexp.MustCompile(`^s\.jsonl:[0-9]+: `)

// FuzzReadStream: any input either reads into valid batches in time order or fails with
// an error naming the file and the line (or, for a file of no batch, with every line
// said in skipped); it never panics.
func FuzzReadStream(f *testing.F) {
	f.Add([]byte(`{"node":"wave-1","ts":"2026-11-29T14:00:10Z","interval_s":10,"points":[{"name":"cpu.util","value":1}]}` + "\n" +
		`{"node":"wave-2","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[]}`))
	f.Add([]byte("\n\n  \n"))
	f.Add([]byte(`{"node":"wave-1"}` + "\n"))
	f.Add([]byte(`{"node":"a","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[{"name":"x","value":1,"labels":{"k":"v"}}]}` + "\r\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, skipped, err := readStream(bytes.NewReader(data), "s.jsonl", time.Time{}, time.Time{})
		for _, w := range skipped {
			if !lineErr.MatchString(w) {
				t.Fatalf("a skipped line not named by the file and line: %s", w)
			}
		}
		if err != nil {
			// A file of no batch is refused as a whole, each of its lines said in skipped.
			noBatch := strings.HasPrefix(err.Error(), "s.jsonl: none of its ") && len(skipped) > 0
			if !lineErr.MatchString(err.Error()) && !noBatch {
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
	_, _, err := readStream(strings.NewReader("\n"+fill(metric.MaxBatchBytes+1)+"\n"), "s.jsonl", time.Time{}, time.Time{})
	if err == nil || !strings.HasPrefix(err.Error(), "s.jsonl:2: a line longer than 1048576 bytes") {
		t.Fatalf("over the limit: %v", err)
	}
	// At the limit the line is read and decoded: here the label value is too long, which
	// the decoder says.
	_, skipped, err := readStream(strings.NewReader(fill(metric.MaxBatchBytes)), "s.jsonl", time.Time{}, time.Time{})
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0], "s.jsonl:1: skipped, as the alarm skips it: invalid metric batch") {
		t.Fatalf("at the limit: %v, %q", err, skipped)
	}
	// That line alone: no batch at all, which is no stream.
	if err == nil || !strings.Contains(err.Error(), "s.jsonl: none of its 1 lines is a metric batch") {
		t.Fatalf("a file of no batch: %v, want it said", err)
	}
}

// A file of which no line is a batch (the wrong file) is an error, each line said: it
// replayed nothing and exited 0.
func TestReadStreamRefusesAFileOfNoBatch(t *testing.T) {
	_, skipped, err := readStream(strings.NewReader("garbage\n{\"a\":1}\n\n"), "s.jsonl", time.Time{}, time.Time{})
	if len(skipped) != 2 || err == nil || !strings.Contains(err.Error(), "none of its 2 lines is a metric batch") {
		t.Fatalf("%v, %q; want both lines skipped and the file refused", err, skipped)
	}
	// Batches all outside the time range are a stream: nothing to replay there is no error.
	good := `{"node":"wave-1","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[{"name":"cpu.util","value":1}]}`
	bs, _, err := readStream(strings.NewReader(good+"\n"), "s.jsonl", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{})
	if err != nil || len(bs) != 0 {
		t.Fatalf("a stream outside the range: %d batches, %v", len(bs), err)
	}
}

// A bad line in a recording is skipped, as the live alarm skips a bad message, and said
// by its file and line; the rest replays.
func TestReadStreamSkipsABadLine(t *testing.T) {
	good := func(s int) string {
		return `{"node":"wave-1","ts":"2026-11-29T14:00:` + fmt.Sprintf("%02d", s) + `Z","interval_s":10,"points":[{"name":"cpu.util","value":1}]}`
	}
	data := good(0) + "\n" + `{"node":"wave-1","ts":"bad","interval_s":10,"points":[]}` + "\n" + good(10) + "\n"
	bs, skipped, err := readStream(strings.NewReader(data), "s.jsonl", time.Time{}, time.Time{})
	if err != nil || len(bs) != 2 {
		t.Fatalf("read %d batches, %v; want the two good ones", len(bs), err)
	}
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0], "s.jsonl:2: skipped, as the alarm skips it: ") {
		t.Fatalf("skipped: %q", skipped)
	}
}
