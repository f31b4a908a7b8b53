package bus

import (
	"log/slog"
	"time"

	"github.com/binlake/binlake/internal/logging"
)

// retryWarnEvery is how often a failure of one kind is logged again while it lasts.
const retryWarnEvery = time.Minute

// WarnRetries is an OnError for RetryOptions that logs a failed subscription at WARN, msg
// with the error and the wait: each kind of error (its text) at once, then at most once
// a minute with how many were held back. A subscription to a topic that does not exist
// yet fails every few seconds until it is created, and each one was a warning. count,
// when set, is called for every failure (the role's error metric).
func WarnRetries(log *slog.Logger, msg string, count func()) func(err error, wait time.Duration) {
	th := &logging.Throttle{Every: retryWarnEvery}
	return func(err error, wait time.Duration) {
		if count != nil {
			count()
		}
		if ok, held := th.Allow(err.Error(), time.Now()); ok {
			args := []any{"err", err, "in", wait}
			if held > 0 {
				args = append(args, "same_failures_since_last_line", held)
			}
			log.Warn(msg, args...)
		}
	}
}
