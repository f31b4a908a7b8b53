// Package sink holds the wave's publishers that are not a message bus: a JSON-lines
// writer to stdout or a file, so a user can watch the row stream without Kafka. It
// implements bus.Publisher, the interface the wave publishes through, so the pipeline
// (batching, acknowledgement, offset commits) is the same as with Kafka.
package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/bus"
)

// Line is one line of the output: the topic and key the message would have on a bus and
// the message itself: embedded as JSON when it is JSON, as a string when it is other
// UTF-8 text, in base64 (MessageBase64) when it is not text (the protobuf formats': a
// JSON string would replace its invalid bytes with U+FFFD), and neither for a tombstone
// (a nil value).
type Line struct {
	Topic         string          `json:"topic"`
	Key           string          `json:"key"`
	Message       json.RawMessage `json:"message,omitempty"`
	MessageBase64 []byte          `json:"message_base64,omitempty"`
}

// Writer is a bus.Publisher writing JSON lines.
type Writer struct {
	mu     sync.Mutex
	buf    bytes.Buffer // one Publish's lines, encoded before anything is written
	out    io.Writer    // New's writer; nil for a file
	file   *fileSink    // OpenFile's file; nil for New
	closed bool
}

var (
	_ bus.Publisher = (*Writer)(nil)
	_ bus.Syncer    = (*Writer)(nil)
)

// ContextWriter is a writer that takes the context of the Publish it writes for: one
// whose failure stops its publisher (`binlake up -rows -`, whose reader is gone) can
// hold the write until that stop ends the context, so that the wave sees a stop, not a
// failed write to retry.
type ContextWriter interface {
	WriteContext(ctx context.Context, b []byte) (int, error)
}

// New writes to w (for example os.Stdout), through WriteContext when w has it. Publish
// returns once the lines are written to w; Close does not close w. A failed write cannot
// be taken back on a plain writer: a retried Publish may follow a partial line.
func New(w io.Writer) *Writer {
	return &Writer{out: w}
}

// Publish writes one line per message, all of them or (for a file) none.
func (s *Writer) Publish(ctx context.Context, msgs ...bus.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return bus.ErrClosed
	}
	// Encode everything first: a bad message then leaves nothing half-written.
	s.buf.Reset()
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("publish message %d: empty topic", i)
		}
		line, err := json.Marshal(lineOf(m))
		if err != nil {
			return fmt.Errorf("publish message %d: %w", i, err)
		}
		s.buf.Write(line)
		s.buf.WriteByte('\n')
	}
	if s.file != nil {
		return s.file.write(s.buf.Bytes())
	}
	var err error
	if cw, ok := s.out.(ContextWriter); ok {
		_, err = cw.WriteContext(ctx, s.buf.Bytes())
	} else {
		_, err = s.out.Write(s.buf.Bytes())
	}
	if err != nil {
		return fmt.Errorf("sink: write: %w", err)
	}
	return nil
}

// lineOf is the line of message m.
func lineOf(m bus.Message) Line {
	l := Line{Topic: m.Topic, Key: string(m.Key)}
	switch {
	case m.Value == nil:
	case json.Valid(m.Value):
		l.Message = m.Value
	case utf8.Valid(m.Value):
		l.Message, _ = json.Marshal(string(m.Value))
	default:
		l.MessageBase64 = m.Value
	}
	return l
}

// Sync makes every line of the Publish calls that returned so far durable (fsync); the
// wave calls it before it commits an offset. It does nothing for a writer given to New.
func (s *Writer) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return bus.ErrClosed
	}
	if s.file == nil {
		return nil
	}
	return s.file.sync()
}

// Close closes the file (not a writer given to New). It is idempotent.
func (s *Writer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.file != nil {
		return s.file.close()
	}
	return nil
}
