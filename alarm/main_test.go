package alarm

import (
	"io"
	"log/slog"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMain(m *testing.M) { testenv.RunRemovingBinlake(m) }
