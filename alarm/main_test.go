package alarm

import (
	"io"
	"log/slog"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
