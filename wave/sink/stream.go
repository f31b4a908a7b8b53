package sink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/binlake/binlake/internal/bus"
)

// StreamReader reads the lines a sink writes from a stream as they come (bus.Reader),
// for `binlake up --rows - | binlake tail -file -`: like FileReader, partition 0 whose
// offsets are line numbers, but a stream has no end to count back from and cannot be
// read again. Read ends at the stream's end, or at once when ctx ends (the read that
// waits on the stream is then left to finish on its own).
type StreamReader struct {
	In io.Reader
	// Name names the stream in errors ("stdin").
	Name string
}

var _ bus.Reader = (*StreamReader)(nil)

// Read delivers the stream's lines from opts.From, which must be the start or an offset;
// opts.Follow changes nothing: a stream is read as it comes until it ends.
func (r *StreamReader) Read(ctx context.Context, opts bus.ReadOptions, h func(bus.Message) error) error {
	for _, p := range opts.Partitions {
		if p != 0 {
			return fmt.Errorf("read %s: partition %d: %w (a stream of rows is partition 0 only)", r.Name, p, bus.ErrNoSuchPartition)
		}
	}
	skip := int64(0)
	switch opts.From.Kind {
	case bus.FromOldest:
	case bus.FromOffset:
		skip = max(opts.From.N, 0)
	default:
		return fmt.Errorf("read %s: %w: a stream has no end to count back from and keeps no publish time per line; start from the start or a line number (offset)", r.Name, bus.ErrNotSupported)
	}
	msgs := make(chan bus.Message)
	done := make(chan struct{})
	defer close(done)
	errc := make(chan error, 1)
	go func() {
		lr := &lineReader{path: r.Name, topic: opts.Topic, r: bufio.NewReaderSize(r.In, 64<<10)}
		// each waits on the stream for its lines and returns at its end.
		errc <- lr.each(func(m bus.Message) error {
			if m.Offset < skip {
				return nil
			}
			select {
			case msgs <- m:
				return nil
			case <-done:
				return errStreamDone
			}
		})
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-msgs:
			if err := h(m); err != nil {
				return err
			}
		case err := <-errc:
			if errors.Is(err, errStreamDone) {
				return nil
			}
			return err
		}
	}
}

// errStreamDone ends a reading whose Read returned or whose context ended.
var errStreamDone = errors.New("read ended")
