package judge

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

// elasticStores opens stores of a prefix of the test's own on the test engine, whose
// indices (its records index too) are removed at the end.
func elasticStores(t *testing.T, _ *clock) func() store.Store {
	cfg := estest.Config(t)
	prefix := fmt.Sprintf("binlake-test-%08x-restart-", rand.Uint32())
	estest.CleanupPrefix(t, prefix)
	return func() store.Store {
		st, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix, Logger: quiet})
		require.NoError(t, err)
		return st
	}
}

// The restart tests on the Elasticsearch store: its records index keeps the
// reservations and the nodes' intervals as SQLite's table does.
func TestRestartKeepsReservationsElasticIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	testRestartKeepsReservations(t, elasticStores)
}

func TestRestartKeepsStalenessElasticIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	testRestartKeepsStaleness(t, elasticStores)
}

func TestRestartKeepsInstanceStatesElasticIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	testRestartKeepsInstanceStates(t, elasticStores)
}
