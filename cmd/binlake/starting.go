//go:build !agentonly

package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
)

// starting answers every request at a role's address with 503 and what the role waits
// for, until Stop frees the address for the role's own server. A wave waits for
// ZooKeeper, the judge for a Kafka broker, the alarm for both, before they serve: their
// /healthz refused connections meanwhile, as a dead process's does, and an operator or a
// load balancer could not tell the two apart.
type starting struct {
	node string
	body atomic.Pointer[[]byte]
	srv  *http.Server
	done chan struct{}
}

// serveStarting starts answering at addr (over TLS when tc sets its files) that the
// role waits for waitingFor. Nothing is served when addr is empty or cannot be bound
// (the role's own listen then says why).
func serveStarting(addr string, tc config.HTTPTLS, node, waitingFor string, log *slog.Logger) *starting {
	s := &starting{node: node}
	s.Waiting(waitingFor)
	if addr == "" {
		return s
	}
	ln, err := httpapi.Listen(addr, tc)
	if err != nil {
		log.Debug("starting: not serving while waiting", "listen", addr, "err", err)
		return s
	}
	s.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.Header().Set("Retry-After", "5")
			rw.WriteHeader(http.StatusServiceUnavailable)
			rw.Write(*s.body.Load())
		})}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("starting: serving while waiting failed", "listen", addr, "err", err)
		}
	}()
	return s
}

// Waiting says what the role waits for now.
func (s *starting) Waiting(what string) {
	answer := map[string]string{"status": "starting", "waiting_for": what}
	if s.node != "" {
		answer["node"] = s.node
	}
	b, _ := json.Marshal(answer)
	b = append(b, '\n')
	s.body.Store(&b)
}

// Stop stops answering and frees the address.
func (s *starting) Stop() {
	if s.srv == nil {
		return
	}
	s.srv.Close() // closes the listener: the role binds the address next
	<-s.done
}
