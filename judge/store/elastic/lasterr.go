package elastic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
)

// lastErrTransport remembers the last error of a request to the engine: the client
// retries a refused connection until the caller's deadline, and the error it then
// returns is the deadline's ("context deadline exceeded"), which names neither the
// engine's address nor why it did not answer.
type lastErrTransport struct {
	next http.RoundTripper
	last atomic.Pointer[error]
}

func (t *lastErrTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(r)
	if err != nil && r.Context().Err() == nil {
		t.last.Store(&err)
	} else if err == nil {
		t.last.Store(nil)
	}
	return res, err
}

// explain adds the last transport error to err when err is only the caller's deadline.
func (t *lastErrTransport) explain(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	if last := t.last.Load(); last != nil {
		return fmt.Errorf("%w (the engine's last attempt: %v)", err, *last)
	}
	return err
}
