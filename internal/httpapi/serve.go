package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// shutdownTimeout is how long Serve lets the requests in flight finish once its context
// ends; past it the remaining connections are closed. A variable for the tests.
var shutdownTimeout = 10 * time.Second

// Serve serves h on ln (HTTPS when ln comes from Listen or TLSListener with TLS) until ctx ends, then shuts the server down (requests in flight get
// 10 s). It logs what it serves where, and calls ready (when set) with the
// bound address. It returns nil after a shutdown, or why serving failed, named after
// what: in a run group (errgroup) that error stops the role, so a role never goes on
// without the endpoint its operators and scrapers rely on.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, what string, log *slog.Logger, ready func(addr string)) error {
	// Timeouts keep slow or idle clients from holding connections.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		// The server's own messages (a failed TLS handshake, a plain-HTTP request to
		// HTTPS) go to the role's log, not to the standard logger.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Requests carry the role's logger (requestLogger) for what is logged on their way.
		BaseContext: func(net.Listener) context.Context { return context.WithValue(context.Background(), loggerKey{}, log) }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info(what+" serving", "addr", Scheme(ln)+"://"+addr)
	if ready != nil {
		ready(addr)
	}
	select {
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		srv.Close() // the connections already accepted end with the listener
		return fmt.Errorf("%s: http server: %w", what, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn(what+": http shutdown", "err", err)
		srv.Close()
	}
	<-served
	return nil
}
