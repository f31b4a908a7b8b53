//go:build !agentonly

package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveStarting answers every request at addr with 503 and what the process waits for,
// until the returned stop is called (which frees addr for the process's own server). A
// wave waits for ZooKeeper before it can serve: its /healthz refused connections
// meanwhile, as a dead process's does, and an operator or a load balancer could not tell
// the two apart. Nothing is served when addr is empty or cannot be bound (the process's
// own listen then says why).
func serveStarting(addr, node, waitingFor string, log *slog.Logger) (stop func()) {
	if addr == "" {
		return func() {}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Debug("starting: not serving while waiting", "listen", addr, "err", err)
		return func() {}
	}
	body, _ := json.Marshal(map[string]string{"status": "starting", "node": node, "waiting_for": waitingFor})
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
