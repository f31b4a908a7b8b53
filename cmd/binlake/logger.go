package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/binlake/binlake/internal/logging"
)

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	l, err := logging.New(w, level, "text")
	if err != nil {
		return nil, fmt.Errorf("bad -log-level %q: want debug, info, warn or error", level)
	}
	return l, nil
}
