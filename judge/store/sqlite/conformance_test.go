package sqlite_test

import (
	"testing"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/store/storetest"
)

// TestConformance runs the store conformance suite on SQLite. Under -race it runs only
// the concurrent writers and readers: the SQLite engine is C transpiled to Go
// (modernc.org/sqlite), which the race detector slows twenty-fold (about 50 s against
// 2.5 s for the whole suite on the 2-core CI machine) while it checks only the engine's
// single-threaded internals there. `make test` runs the whole suite in its second pass,
// without -race (NORACE_TESTS in the Makefile).
func TestConformance(t *testing.T) {
	if testenv.Race {
		storetest.RunConcurrentWrites(t, newStore)
		return
	}
	storetest.Run(t, newStore)
}
