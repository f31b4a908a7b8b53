package sink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// maxLineBytes bounds one line a FileReader accepts unless it begins as the sink's lines
// do (sinkLineStart): a longer one is not a rows file's, and reading it whole could take
// all the memory. A sink line has no bound: the wave wrote it whole, and a 63 MiB row
// made an 88 MB line that tail refused, and every line after it with it (an outside
// trial).
var maxLineBytes = 64 << 20

// sinkLineStart is how every line the sink writes begins (Line's first field).
const sinkLineStart = `{"topic":`

// FileReader reads back what a file sink wrote (bus.Reader), for `binlake tail -file`.
// The file reads as one partition, 0, whose offsets are its line numbers from 0, of
// every topic at once: ReadOptions.Topic keeps that topic's lines (offsets keep counting
// all lines), and "" keeps every line. A line that is not a sink line is delivered as
// it is, with no topic, whatever the topic asked for: damage is shown, not skipped.
type FileReader struct {
	Path string
	// Poll is how often a following Read looks for new lines. 200 ms when zero.
	Poll time.Duration
	// Log, when set, is told once that a following Read waits for a file not there yet.
	Log *slog.Logger
}

var _ bus.Reader = (*FileReader)(nil)

// Read delivers the file's lines from opts.From (bus.FromTime is not supported: a line
// keeps no publish time, as a Kafka message does) and, with opts.Follow, the lines appended later. A line being
// written (no newline yet) waits for its end.
func (r *FileReader) Read(ctx context.Context, opts bus.ReadOptions, h func(bus.Message) error) error {
	for _, p := range opts.Partitions {
		if p != 0 {
			return fmt.Errorf("read %s: partition %d: %w (a rows file is partition 0 only)", r.Path, p, bus.ErrNoSuchPartition)
		}
	}
	if opts.From.Kind == bus.FromTime {
		return fmt.Errorf("read %s: from a time: %w: a rows file keeps no publish time per line (a Kafka topic does; a row's own ts is its source's binlog time); start from the start, the last N or a line number (offset)", r.Path, bus.ErrNotSupported)
	}
	f, waited, err := r.open(ctx, opts.Follow)
	if f == nil || err != nil {
		return err
	}
	if waited {
		opts.From = bus.From{Kind: bus.FromOldest} // every line of a file made since is new
	}
	// A long file read to its end still stops at Ctrl-C.
	deliver := h
	h = func(m bus.Message) error {
		if ctx.Err() != nil {
			return errStreamDone
		}
		return deliver(m)
	}
	err = r.read(ctx, f, opts, h)
	if errors.Is(err, errStreamDone) {
		return nil
	}
	return err
}

// open opens the file; following, a file not there yet (removed by a rotation, the wave
// not started) is waited for, as `tail -F` does: the wave makes it at its next commit.
// waited says it was, and is read from its start. nil and no error when ctx ends first.
func (r *FileReader) open(ctx context.Context, follow bool) (*os.File, bool, error) {
	for waited := false; ; waited = true {
		f, err := os.Open(r.Path)
		if err == nil {
			return f, waited, nil
		}
		if !follow || !errors.Is(err, os.ErrNotExist) {
			return nil, false, fmt.Errorf("read rows file: %w", err)
		}
		if !waited && r.Log != nil {
			r.Log.Info("the rows file is not there yet: waiting for it (the wave makes it at its next commit), to read it from its start", "path", r.Path)
		}
		select {
		case <-ctx.Done():
			return nil, waited, nil
		case <-time.After(r.poll()):
		}
	}
}

// poll is Poll, or its default.
func (r *FileReader) poll() time.Duration {
	if r.Poll <= 0 {
		return 200 * time.Millisecond
	}
	return r.Poll
}

func (r *FileReader) read(ctx context.Context, f *os.File, opts bus.ReadOptions, h func(bus.Message) error) error {
	var err error
	defer func() { f.Close() }() // the file read last: a replaced one is swapped in
	lr := &lineReader{path: r.Path, topic: opts.Topic, r: bufio.NewReaderSize(f, 64<<10)}

	switch k := opts.From.Kind; k {
	case bus.FromOldest, bus.FromOffset:
		skip := int64(0)
		if k == bus.FromOffset {
			skip = max(opts.From.N, 0)
		}
		err = lr.each(func(m bus.Message) error {
			if m.Offset < skip {
				return nil
			}
			return h(m)
		})
	case bus.FromNewest:
		err = lr.each(func(bus.Message) error { return nil })
	case bus.FromLast:
		// The last N of the topic asked for: a ring of them, delivered at the end.
		n := int(min(max(opts.From.N, 0), 1<<20))
		var ring []bus.Message
		err = lr.each(func(m bus.Message) error {
			if n == 0 {
				return nil
			}
			ring = keepLast(append(ring, m), n)
			return nil
		})
		ring = ring[max(len(ring)-n, 0):]
		for _, m := range ring {
			if err != nil {
				break
			}
			err = h(m)
		}
	default:
		return fmt.Errorf("read %s: unknown start kind %d", r.Path, k)
	}
	if err != nil || !opts.Follow {
		return err
	}

	tick := time.NewTicker(r.poll())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("read rows file: %w", err)
		}
		if nf, err := r.replaced(fi); err != nil {
			return err
		} else if nf != nil {
			// The sink wrote the old file to its end before it made the new one.
			if err := lr.each(h); err != nil {
				nf.Close()
				return err
			}
			f.Close()
			f = nf
			lr.restart(f)
			continue
		}
		if size := fi.Size(); size < lr.pos+int64(len(lr.partial)) {
			// The sink cut the file back after a failed write or fsync, and writes those
			// lines again: read on from the first line that is no longer as it was read.
			if err := lr.rewind(f, size); err != nil {
				return err
			}
			continue
		}
		if err := lr.each(h); err != nil {
			return err
		}
	}
}

// replaced opens the file now at the path when it is another than the one being read
// (fi): the sink made a new one after the file was removed or rotated, as `tail -F`
// follows a name. nil while the path names the same file, or none yet.
func (r *FileReader) replaced(fi os.FileInfo) (*os.File, error) {
	cur, err := os.Stat(r.Path)
	if err != nil || os.SameFile(fi, cur) {
		return nil, nil // gone: the sink makes it again at its next commit
	}
	nf, err := os.Open(r.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read rows file: %w", err)
	}
	return nf, nil
}

// restart reads f from its start, its lines counted from 0 again.
func (lr *lineReader) restart(f *os.File) {
	lr.r.Reset(f)
	lr.pos, lr.line, lr.partial, lr.recent = 0, 0, lr.partial[:0], lr.recent[:0]
}

// recentLines is how many of the last lines read a following FileReader remembers, to
// find where the sink cut the file back: far more than one Publish's lines, which is
// the most the sink cuts.
const recentLines = 4096

// lineReader turns the file's whole lines into messages, counting lines and bytes.
type lineReader struct {
	path    string
	topic   string
	r       *bufio.Reader
	pos     int64 // bytes of the whole lines read
	line    int64 // whole lines read
	partial []byte
	// recent are the last lines read (at least the last recentLines), oldest first.
	recent []readLine
}

// readLine is where a line that was read starts, its length and its hash.
type readLine struct {
	start int64
	n     int
	sum   uint64
}

// rewind moves the reader back to the first of its recent lines that the file, now size
// bytes long, no longer holds as it was read (cut, or cut and written again), so that
// the lines from there are read (and delivered) again with their offsets. A cut before
// every remembered line starts again at the file's start.
func (lr *lineReader) rewind(f *os.File, size int64) error {
	back := len(lr.recent)
	buf := []byte(nil)
	for i, l := range lr.recent {
		if l.start+int64(l.n) > size {
			back = i
			break
		}
		buf = slices.Grow(buf[:0], l.n)[:l.n]
		if _, err := f.ReadAt(buf, l.start); err != nil {
			return fmt.Errorf("read rows file: %w", err)
		}
		if hashLine(buf) != l.sum {
			back = i
			break
		}
	}
	switch {
	case back < len(lr.recent):
		lr.line -= int64(len(lr.recent) - back)
		lr.pos = lr.recent[back].start
		lr.recent = lr.recent[:back]
	case size < lr.pos: // cut before every line remembered
		lr.pos, lr.line, lr.recent = 0, 0, lr.recent[:0]
	}
	if _, err := f.Seek(lr.pos, io.SeekStart); err != nil {
		return fmt.Errorf("read rows file: %w", err)
	}
	lr.r.Reset(f)
	lr.partial = lr.partial[:0]
	return nil
}

// keepLast returns s, dropping its oldest elements once it holds 2n, so that it holds
// at least its last n at the cost of one copy per n appends.
func keepLast[T any](s []T, n int) []T {
	if len(s) < 2*n {
		return s
	}
	return append(s[:0], s[len(s)-n:]...)
}

func hashLine(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// each hands every whole line from the reader's position to h, up to the end of the
// file; a last line without its newline is kept for the next call.
func (lr *lineReader) each(h func(bus.Message) error) error {
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.partial = append(lr.partial, chunk...)
		if len(lr.partial) > maxLineBytes && !bytes.HasPrefix(lr.partial, []byte(sinkLineStart)) {
			return fmt.Errorf("read %s: line %d is longer than %d bytes and does not begin as a rows file's lines (%s): not a rows file?", lr.path, lr.line, maxLineBytes, sinkLineStart)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			// A partial line stays in lr.partial until its newline comes.
			return nil
		case err != nil:
			return fmt.Errorf("read rows file: %w", err)
		}
		line := lr.partial
		lr.partial = lr.partial[:0]
		off := lr.line
		lr.recent = keepLast(append(lr.recent, readLine{start: lr.pos, n: len(line), sum: hashLine(line)}), recentLines)
		lr.line++
		lr.pos += int64(len(line))
		m, ok := decodeLine(bytes.TrimSuffix(line, []byte{'\n'}))
		if ok && lr.topic != "" && m.Topic != lr.topic {
			continue
		}
		m.Offset = off
		if err := h(m); err != nil {
			return err
		}
	}
}

// decodeLine turns a line the sink wrote into its message; ok is false for a line that
// is not one, which is returned as its value (a copy: the line's buffer is reused).
func decodeLine(line []byte) (bus.Message, bool) {
	var l Line
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil || dec.More() || l.Topic == "" || (len(l.Message) > 0 && l.MessageBase64 != nil) {
		return bus.Message{Value: bytes.Clone(line)}, false
	}
	m := bus.Message{Topic: l.Topic, Key: []byte(l.Key)}
	switch {
	case l.MessageBase64 != nil:
		m.Value = l.MessageBase64
	case len(l.Message) == 0:
		// A tombstone: no value at all.
	case l.Message[0] == '"':
		// A value that was not JSON, written as a JSON string (Publish).
		var s string
		m.Value = []byte(l.Message)
		if json.Unmarshal(l.Message, &s) == nil {
			m.Value = []byte(s)
		}
	default:
		m.Value = []byte(l.Message)
	}
	return m, true
}
