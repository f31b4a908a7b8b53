//go:build !agentonly

package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
)

// serveStarting answers every request at addr (over TLS when tc sets its files) with 503
// and what the process waits for, until the returned stop is called (which frees addr
// for the process's own server). A wave waits for ZooKeeper, the judge for a Kafka
// broker, the alarm for both, before they serve: their /healthz refused connections
// meanwhile, as a dead process's does, and an operator or a load balancer could not tell
// the two apart. Nothing is served when addr is empty or cannot be bound (the process's
// own listen then says why).
func serveStarting(addr string, tc config.HTTPTLS, node, waitingFor string, log *slog.Logger) (stop func()) {
	if addr == "" {
		return func() {}
	}
	ln, err := httpapi.Listen(addr, tc)
	if err != nil {
		log.Debug("starting: not serving while waiting", "listen", addr, "err", err)
		return func() {}
	}
	answer := map[string]string{"status": "starting", "waiting_for": waitingFor}
	if node != "" {
		answer["node"] = node
	}
	body, _ := json.Marshal(answer)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.Header().Set("Retry-After", "5")
			rw.WriteHeader(http.StatusServiceUnavailable)
			rw.Write(append(body, '\n'))
		})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("starting: serving while waiting failed", "listen", addr, "err", err)
		}
	}()
	return func() {
		srv.Close() // closes the listener: the wave binds addr next
		<-done
	}
}
