package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/binlake/binlake/internal/up"
)

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", "127.0.0.1:8080", "address of the API, status page and /healthz")
	dataDir := fs.String("data", "./data", "folder for the embedded store, coordinator file and alarm log")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: binlake up [flags]\n\nRuns the suite in one process on embedded defaults (no Kafka, Elasticsearch or ZooKeeper needed).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	return up.Run(ctx, up.Options{
		HTTPAddr: *httpAddr,
		DataDir:  *dataDir,
		Logger:   logger,
		Ready: func(addr string) {
			fmt.Fprintf(stdout, "binlake is up: http://%s/healthz (Ctrl-C stops it)\n", addr)
		},
	})
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad -log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
