// Package sink holds the wave's publishers that are not a message bus: a JSON-lines
// writer to stdout or a file, so a user can watch the row stream without Kafka. It
// implements bus.Publisher, the interface the wave publishes through, so the pipeline
// (batching, acknowledgement, offset commits) is the same as with Kafka.
package sink

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/binlake/binlake/internal/bus"
)

// Line is one line of the output: the topic and key the message would have on a bus and
// the message itself (embedded as JSON when it is JSON, as a string otherwise).
type Line struct {
	Topic   string          `json:"topic"`
	Key     string          `json:"key"`
	Message json.RawMessage `json:"message"`
}

// Writer is a bus.Publisher writing JSON lines.
type Writer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	f      *os.File // nil for stdout or a plain io.Writer
	sync   bool
	closed bool
	closer io.Closer
}

var _ bus.Publisher = (*Writer)(nil)

// New writes to w (for example os.Stdout). Publish returns once the lines are written
// to w; Close does not close w.
func New(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10)}
}

// OpenFile appends to the file at path, creating it and its directory. With sync, each
// Publish returns only after fsync: an acknowledged message survives a crash of the
// machine, which is what the wave's offset commit assumes of an acknowledgement.
func OpenFile(path string, sync bool) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	return &Writer{w: bufio.NewWriterSize(f, 256<<10), f: f, sync: sync, closer: f}, nil
}

// Publish writes one line per message and flushes.
func (s *Writer) Publish(ctx context.Context, msgs ...bus.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return bus.ErrClosed
	}
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("publish message %d: empty topic", i)
		}
		msg := json.RawMessage(m.Value)
		if !json.Valid(m.Value) {
			b, _ := json.Marshal(string(m.Value))
			msg = b
		}
		line, err := json.Marshal(Line{Topic: m.Topic, Key: string(m.Key), Message: msg})
		if err != nil {
			return fmt.Errorf("publish message %d: %w", i, err)
		}
		s.w.Write(line)
		if err := s.w.WriteByte('\n'); err != nil {
			return fmt.Errorf("file sink: write: %w", err)
		}
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("file sink: write: %w", err)
	}
	if s.sync && s.f != nil {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("file sink: sync: %w", err)
		}
	}
	return nil
}

// Close flushes and closes the file (not a writer given to New). It is idempotent.
func (s *Writer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Flush()
	if s.closer != nil {
		if cerr := s.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
