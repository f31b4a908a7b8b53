// Package up runs the whole suite in one process on the embedded defaults
// (in-process bus, embedded store, single-node coordinator): `binlake up`.
package up

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/buildinfo"
)

// Options configures `binlake up`.
type Options struct {
	// HTTPAddr is where the API, status page and /healthz listen.
	HTTPAddr string
	// DataDir holds the embedded store, the coordinator file and the alarm log.
	DataDir string
	Logger  *slog.Logger
	// Ready, when set, receives the bound HTTP address once the suite serves.
	Ready func(addr string)
}

// Run serves until ctx ends, then shuts down within a bounded time.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	log := o.Logger.With("component", "up")
	ln, err := net.Listen("tcp", o.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.HTTPAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","version":%q}`+"\n", buildinfo.String())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	addr := ln.Addr().String()
	log.Info("binlake up serving", "http", "http://"+addr, "data", o.DataDir, "version", buildinfo.String())
	if o.Ready != nil {
		o.Ready(addr)
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}
