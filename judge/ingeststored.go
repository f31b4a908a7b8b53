package judge

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// storedWait bounds how long a POST of metrics waits for the store to have its points:
// under the agent's default sink.http.timeout (5 s), so that an agent reads the 503 that
// says why rather than its own timeout.
const storedWait = 4 * time.Second

// ingestStored ingests batches posted over HTTP (POST /v1/metrics, POST /api/v1/write)
// and returns once the store has every one of their points: its answer then means that
// a judge killed next has them. The wait is a group commit: the store buffer's writers
// take every point queued since their last write (up to store.buffer.batch) into one
// write, so that concurrent requests share a write and its sync.
//
// It fails, wrapping store.ErrFull, when the buffer has no room for the batches' points
// (nothing is queued), and with a 503 when the store has not taken them within
// storedWait or the request ends first: they stay queued and will be written, and the
// sender sends them again (a point stored twice changes nothing). The batches are
// analysed all the same. With store.buffer.http_overflow drop, the points are queued
// and answered at once, as that mode drops queued points to take new ones: its answer
// promises nothing of the store.
func (j *Judge) ingestStored(ctx context.Context, source string, batches ...metric.Batch) error {
	if j.o.Buffer.Overflow == store.OverflowDrop {
		for _, b := range batches {
			if err := j.Ingest(b, source); err != nil {
				return err
			}
		}
		return nil
	}
	stored := make(chan struct{}, len(batches)) // one per batch, from the buffer's writers
	for _, b := range batches {
		pts := j.observe(b, source)
		if err := j.buf.WriteOwnedAcked(pts, func() { stored <- struct{}{} }); err != nil {
			return fmt.Errorf("judge: store %d points: %w", len(pts), err)
		}
	}
	t := time.NewTimer(storedWait)
	defer t.Stop()
	for range batches {
		select {
		case <-stored:
		case <-t.C:
			return httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeUnavailable,
				"the store has not taken the points within %s (it is slow or down): send them again; a point stored twice changes nothing", storedWait)
		case <-ctx.Done():
			return httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeUnavailable,
				"the request ended before the store took its points: send them again")
		}
	}
	return nil
}
