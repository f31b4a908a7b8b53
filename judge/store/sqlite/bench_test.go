package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/storetest"
)

// BenchmarkIngest is issue 10's measure for the embedded store: points/s of agent
// batches through store.Buffered (the judge's defaults) into a fresh file, from the
// first Write until every point is readable.
func BenchmarkIngest(b *testing.B) {
	storetest.BenchIngest(b, open(b, filepath.Join(b.TempDir(), "bench.db")), store.BufferOptions{})
}
