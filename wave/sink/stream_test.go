package sink

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/bustest"
)

// TestStreamReader: the lines a sink writes to a stream come as they are written, from
// the start or an offset, one topic or all, until the stream ends; positions that need
// the stream's end are refused by name; Read returns when its context ends although the
// stream still waits.
func TestStreamReader(t *testing.T) {
	pr, pw := io.Pipe()
	w := New(pw)
	ctx := context.Background()
	r := bustest.StartReading(t, func(handle func(bus.Message) error) error {
		return (&StreamReader{In: pr, Name: "stdin"}).Read(ctx, bus.ReadOptions{Topic: "a", From: bus.From{Kind: bus.FromOffset, N: 1}}, handle)
	}, showOK)
	next := r.Next
	publish := func(topic, key, value string) {
		t.Helper()
		if err := w.Publish(ctx, bus.Message{Topic: topic, Key: []byte(key), Value: []byte(value)}); err != nil {
			t.Fatal(err)
		}
	}
	publish("a", "k0", `{"i":0}`) // before the offset
	publish("b", "k1", `{"i":1}`) // another topic
	publish("a", "k2", `{"i":2}`)
	next(`2 a k2 {"i":2}`)
	if _, err := io.WriteString(pw, "not a sink line\n"); err != nil {
		t.Fatal(err)
	}
	next(`3   not a sink line`)
	pw.Close()
	if err := <-r.Done(); err != nil {
		t.Errorf("Read at the stream's end: %v", err)
	}

	for _, from := range []bus.From{{Kind: bus.FromLast, N: 1}, {Kind: bus.FromNewest}, {Kind: bus.FromTime, Time: time.Now()}} {
		err := (&StreamReader{In: strings.NewReader(""), Name: "stdin"}).Read(ctx, bus.ReadOptions{From: from}, func(bus.Message) error { return nil })
		if !errors.Is(err, bus.ErrNotSupported) || !strings.HasPrefix(err.Error(), "read stdin: not supported: a stream has no end to count back from") {
			t.Errorf("from %+v: %v", from, err)
		}
	}

	// A stream that never writes: Read ends with its context.
	idle, _ := io.Pipe()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- (&StreamReader{In: idle, Name: "stdin"}).Read(cctx, bus.ReadOptions{}, func(bus.Message) error { return nil })
	}()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Read after its context ended: %v", err)
	}
	var lines []string
	err := (&StreamReader{In: strings.NewReader("x\ny\n"), Name: "stdin"}).Read(ctx, bus.ReadOptions{}, func(m bus.Message) error {
		lines = append(lines, show(m))
		return nil
	})
	if err != nil || !slices.Equal(lines, []string{"0   x", "1   y"}) {
		t.Errorf("a stream read to its end: %q, %v", lines, err)
	}
}
