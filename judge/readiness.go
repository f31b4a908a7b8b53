package judge

import (
	"fmt"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/httpapi"
)

// Why a judge is not ready (GET /readyz's reason), in the order they are checked.
const (
	notReadyStopping     = "stopping"      // the judge is stopping: its store buffer is closed
	notReadyStarting     = "starting"      // the judge is restoring its state from the store (restore)
	notReadyStoreFailing = "store_failing" // the store's last write failed, none succeeded since
	notReadyBufferFull   = "buffer_full"   // the store buffer has no room: posts are refused
	notReadyStoreStalled = "store_stalled" // points waited as long as a post does with no write finishing
)

// readiness is GET /readyz's answer.
type readiness struct {
	Status  string `json:"status"`            // "ready" or "not_ready"
	Reason  string `json:"reason,omitempty"`  // one of the notReady codes
	Message string `json:"message,omitempty"` // the reason in words, with the store's error
	// FailingSince is when the store's writes began to fail (store_failing).
	FailingSince *time.Time  `json:"failing_since,omitempty"`
	Store        storeHealth `json:"store"`
	// FeedStalledSince is when the metric bus stopped answering, while it does not
	// (feedwatch.go): the judge is still ready (its store takes POST /v1/metrics), and
	// judges the nodes' staleness as of then.
	FeedStalledSince *time.Time `json:"feed_stalled_since,omitempty"`
}

// ready reports whether the store takes the judge's writes now, which is what POST
// /v1/metrics and remote write answer by: the judge is ready unless it is stopping, the
// store's last write failed (from the first failure until a write succeeds: an engine
// that refuses connections fails within the client's retries), the buffer is full (a
// post is refused at once), or points have waited longer than stalled (storedWait, 4 s:
// as long as a post waits) with no write finishing (an engine that takes connections and
// does not answer fails a write only after store.buffer.write_timeout, 30 s). A judge that is not ready
// still answers placements from what it has: /healthz (liveness) stays 200, as a restart
// does not bring a store back, and a load balancer that takes it out of the metric
// senders' pool sends them to a judge whose store works. A store that has been idle since
// it went down looks ready until the next batch's write fails: the judge does not probe.
func (j *Judge) ready(stalled time.Duration) readiness {
	h, c := j.buf.Health(), j.buf.Counters()
	r := readiness{Status: "ready",
		Store: storeHealth{Buffered: c.Buffered, Dropped: c.Dropped, Written: c.Written, WriteErrors: c.Errors, Refused: c.Refused}}
	switch {
	case h.Closed:
		r.Reason, r.Message = notReadyStopping, "the judge is stopping"
	case j.Restoring() != nil:
		r.Reason, r.Message = notReadyStarting, "the judge is starting: it is restoring its state from the store"
	case h.Err != nil:
		since := h.FailingSince.UTC()
		r.Reason, r.FailingSince = notReadyStoreFailing, &since
		r.Message = fmt.Sprintf("the store's writes fail (for %s; the buffer holds %d points and retries): %v",
			time.Since(h.FailingSince).Round(time.Second), c.Buffered, h.Err)
	case h.Full:
		r.Reason = notReadyBufferFull
		r.Message = fmt.Sprintf("the store buffer is full (%d points): the store is slower than the points arrive", c.Capacity)
	case h.Waiting > stalled:
		r.Reason = notReadyStoreStalled
		r.Message = fmt.Sprintf("points have waited %s with no write to the store finishing (a post waits %s)",
			h.Waiting.Round(time.Millisecond), storedWait)
	}
	if r.Reason != "" {
		r.Status = "not_ready"
	}
	if since := j.feedStalledSince(); !since.IsZero() {
		r.FeedStalledSince = &since
	}
	return r
}

// handleReady is GET and HEAD /readyz: 200 when the judge is ready, 503 (with
// Retry-After, as every 503) naming the reason otherwise.
func (j *Judge) handleReady(w http.ResponseWriter, r *http.Request) {
	rd := j.ready(storedWait)
	status := http.StatusOK
	if rd.Reason != "" {
		status = http.StatusServiceUnavailable
	}
	httpapi.WriteJSON(w, r, status, rd)
}
