package alarm

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinlakeBinary() // the process tests' build
	os.Exit(code)
}
