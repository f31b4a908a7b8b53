package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
)

// receiver is the webhook channel's endpoint: it records when each alert (policy and
// node) first arrived firing.
type receiver struct {
	url string
	srv *http.Server

	mu       sync.Mutex
	firing   map[alertKey]time.Time
	requests int
	changed  chan struct{} // closed and replaced on each new firing alert
	bad      int           // bodies that were not a webhook payload
}

type alertKey struct{ policy, node string }

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench alarm: webhook receiver: %w", err)
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/alerts", firing: map[alertKey]time.Time{}, changed: make(chan struct{})}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	r.record(now, body, err)
	w.WriteHeader(http.StatusOK)
}

// record notes the firing alerts of one webhook body received at now.
func (r *receiver) record(now time.Time, body []byte, readErr error) {
	var p notify.WebhookPayload
	err := readErr
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.bad++
		return
	}
	fresh := false
	for _, a := range p.Alerts {
		k := alertKey{a.Labels[policy.LabelAlertName], a.Labels[policy.LabelNode]}
		if _, ok := r.firing[k]; a.Status == notify.StatusFiring && !ok {
			r.firing[k] = now
			fresh = true
		}
	}
	if fresh {
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// arrivals returns when each of keys first arrived firing (zero: not yet), and a channel
// closed on the next new arrival.
func (r *receiver) arrivals(keys []alertKey) ([]time.Time, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Time, len(keys))
	for i, k := range keys {
		out[i] = r.firing[k]
	}
	return out, r.changed
}

// stats are the requests received, the bodies that were not payloads, and the distinct
// firing alerts.
func (r *receiver) stats() (requests, bad, alerts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, r.bad, len(r.firing)
}

func (r *receiver) close() { r.srv.Close() }
