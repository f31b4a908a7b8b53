package judge

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
)

// storeOpener opens one store for a restart test, on the test's clock (c), each time it is
// called the same (a file, an index prefix), as each process of a judge opens its own.
type storeOpener func(t *testing.T, c *clock) func() store.Store

// sqliteStores opens a file of the test's own.
func sqliteStores(t *testing.T, c *clock) func() store.Store {
	path := filepath.Join(t.TempDir(), "judge.db")
	return func() store.Store {
		st, err := sqlite.Open(sqlite.Options{Path: path, Now: c.Now})
		require.NoError(t, err)
		return st
	}
}

// restartable starts a judge with o on a store open returns, each time it is called,
// and closes the store after the judge.
func restartable(t *testing.T, open func() store.Store, c *clock, o Options) func() (*Judge, func()) {
	return func() (*Judge, func()) {
		st := open()
		o.Store, o.Now = st, c.Now
		_, j, stop := startJudge(t, o)
		return j, func() {
			stop()
			require.NoError(t, st.Close())
		}
	}
}

func reservedInstances(rs []api.Reservation) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Instance)
	}
	return out
}

// Placements made just before a restart (a deploy) still count on their nodes after it,
// and end as they would have: a restarted judge placed the next instances onto the
// nodes those placements had just filled. One restarted after their TTL has none.
func TestRestartKeepsReservations(t *testing.T) { testRestartKeepsReservations(t, sqliteStores) }

func testRestartKeepsReservations(t *testing.T, stores storeOpener) {
	c := &clock{t: t0}
	open := stores(t, c)
	start := restartable(t, open, c, Options{Algorithm: "leastload", ReservationTTL: time.Minute})

	before, stop := start()
	for i := range 3 {
		require.NoError(t, before.Ingest(wave(fmt.Sprintf("wave-%d", i), c.Now(), 30, 2), sourceHTTP))
	}
	c.Add(time.Second)
	placed := map[string]string{} // instance → node
	for _, id := range []string{"orders", "billing"} {
		ans, err := before.Place(api.PlacementRequest{Instance: id})
		require.NoError(t, err)
		placed[id] = ans.Node
	}
	require.NotEqual(t, placed["orders"], placed["billing"], "the second placement counted the first")
	stop()

	c.Add(5 * time.Second)
	after, stop := start()
	for id, node := range placed {
		require.Equal(t, []string{id}, reservedInstances(after.Reservations(node)), "%s's reservation on %s", id, node)
	}
	ans, err := after.Place(api.PlacementRequest{Instance: "users"})
	require.NoError(t, err)
	require.NotContains(t, []string{placed["orders"], placed["billing"]}, ans.Node,
		"the third instance goes to the node without a reservation")
	c.Add(time.Minute - 5*time.Second) // the first two reach their TTL, from their placement
	for _, node := range placed {
		require.Empty(t, after.Reservations(node))
	}
	stop()

	c.Add(time.Minute)
	third, stop := start()
	require.Zero(t, third.res.size.Load(), "every reservation expired")
	stop()
	st := open()
	defer st.Close()
	recs, err := st.Records(context.Background(), recordReservation)
	require.NoError(t, err)
	require.Empty(t, recs, "the expired reservations' records are deleted")
}
