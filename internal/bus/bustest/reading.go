package bustest

import (
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// Reading is a bus.Reader's Read running in the background, each message it hands over
// shown as a string, so that a test can wait for what it expects, in order.
type Reading struct {
	t    testing.TB
	got  chan string
	done chan error
}

// StartReading runs read in a goroutine. read calls Read with the handler it is given; show
// renders each message, and its error is the handler's (to end Read from the test's side).
func StartReading(t testing.TB, read func(handle func(bus.Message) error) error, show func(bus.Message) (string, error)) *Reading {
	r := &Reading{t: t, got: make(chan string, 100), done: make(chan error, 1)}
	go func() {
		r.done <- read(func(m bus.Message) error {
			s, err := show(m)
			r.got <- s
			return err
		})
	}()
	return r
}

// Next fails the test unless the next message shown is want, within Timeout.
func (r *Reading) Next(want string) {
	r.t.Helper()
	select {
	case g := <-r.got:
		if g != want {
			r.t.Fatalf("read %q, want %q", g, want)
		}
	case err := <-r.done:
		r.t.Fatalf("Read ended (%v) before %q", err, want)
	case <-time.After(Timeout):
		r.t.Fatalf("no %q within %v", want, Timeout)
	}
}

// Got is the channel of messages shown, for what Next does not cover.
func (r *Reading) Got() <-chan string { return r.got }

// Done receives Read's result once it returns.
func (r *Reading) Done() <-chan error { return r.done }
