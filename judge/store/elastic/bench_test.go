package elastic_test

import (
	"testing"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/storetest"
)

// BenchmarkIngest is issue 10's measure for the distributed store: points/s of agent
// batches through store.Buffered (the judge's defaults) into the engine at
// BINLAKE_TEST_ES, from the first Write until every point is searchable. It needs
// BINLAKE_TEST_ES.
func BenchmarkIngest(b *testing.B) {
	testenv.Require(b, testenv.Elasticsearch)
	prefix := testPrefix(b)
	estest.CleanupPrefix(b, prefix)
	storetest.BenchIngest(b, newStore(b, prefix), store.BufferOptions{})
}
