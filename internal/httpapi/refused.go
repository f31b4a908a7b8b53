package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// refusalEvery is how often a sender whose token is refused is warned of: a misconfigured
// agent or Prometheus remote write retries every few seconds, and only its own log said
// so (an outside trial found the judge silent on every 401).
const refusalEvery = time.Minute

// refusalLog is when each client address and path was last warned of, and how many
// refusals were held back since.
type refusalLog struct {
	mu   sync.Mutex
	last map[string]refusal
}

type refusal struct {
	at   time.Time
	held int
}

// warnRefused logs a request refused for its token: the first of a client and path,
// then one a minute with how many were held back. The token itself is never logged.
func (e *Errors) warnRefused(r *http.Request) {
	if e.Log == nil {
		return
	}
	client := r.RemoteAddr
	if host, _, err := net.SplitHostPort(client); err == nil {
		client = host
	}
	key := client + " " + r.URL.Path
	now := time.Now()
	l := &e.refusals
	l.mu.Lock()
	if l.last == nil {
		l.last = map[string]refusal{}
	}
	prev, seen := l.last[key]
	if seen && now.Sub(prev.at) < refusalEvery {
		prev.held++
		l.last[key] = prev
		l.mu.Unlock()
		return
	}
	if len(l.last) > 10_000 { // bounded: a scan of many addresses forgets the oldest all at once
		clear(l.last)
	}
	l.last[key] = refusal{at: now}
	l.mu.Unlock()
	e.Log.Warn("request refused: missing or wrong bearer token", "client", client, "method", r.Method, "path", r.URL.Path,
		"refused_since_last_warning", prev.held)
}
