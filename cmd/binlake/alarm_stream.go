//go:build !agentonly

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/metric"
)

// readStream reads a recorded metric stream: one metric batch per line, as the agents
// send them (the JSON of internal/metric, which the bus's binlake.metrics messages and
// the judge's POST /v1/metrics carry: `kcat -C -t binlake.metrics -e` writes such a
// file), blank lines skipped. Each line is decoded as strictly as the alarm decodes the
// bus's batches, and a bad one is skipped as the alarm skips it: skipped says each,
// naming the file and the line (one bad message in a recording once stopped the whole
// replay). The batches come back in time order (a stream read from several partitions
// interleaves nodes), those outside [from, to) left out (a zero from or to bounds
// nothing). A line longer than the largest batch is an error: the file is no stream; so
// is a file of which no line is a batch (it replayed nothing and exited 0).
func readStream(r io.Reader, name string, from, to time.Time) (out []metric.Batch, skipped []string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	dec := metric.NewDecoder()
	decoded := 0
	for line := 1; ; line++ {
		data, err := readLine(br, metric.MaxBatchBytes)
		if errors.Is(err, errLineTooLong) {
			return nil, skipped, fmt.Errorf("%s:%d: a line longer than %d bytes, the largest metric batch", name, line, metric.MaxBatchBytes)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, skipped, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if data = bytes.TrimSpace(data); len(data) > 0 {
			b, derr := dec.Decode(data)
			if derr != nil {
				skipped = append(skipped, fmt.Sprintf("%s:%d: skipped, as the alarm skips it: %v", name, line, derr))
				continue
			}
			decoded++
			if (from.IsZero() || !b.TS.Before(from)) && (to.IsZero() || b.TS.Before(to)) {
				out = append(out, b)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if decoded == 0 && len(skipped) > 0 {
		// Not one batch: the wrong file, not a recording with a bad line in it.
		return nil, skipped, fmt.Errorf("%s: none of its %d lines is a metric batch: not a recorded metric stream (one JSON batch a line, as the bus carries them)", name, len(skipped))
	}
	slices.SortStableFunc(out, func(a, b metric.Batch) int { return a.TS.Compare(b.TS) })
	return out, skipped, nil
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline (io.EOF with the last one), or
// errLineTooLong once it passes limit bytes.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 { // +1: the newline
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}
