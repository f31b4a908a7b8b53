package judge

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/lbplugins"
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

// A restarted judge calls a node live or stale as the judge before it did: by the
// interval the node declared (30 s here: stale after 3 × 30 s without a batch), not by
// the gap between the node's last two stored batches, which it took for the interval
// until the node's next batch. A batch after an outage made a dead node live for
// 3 × the outage; a batch sent early made a live node stale.
func TestRestartKeepsStaleness(t *testing.T) { testRestartKeepsStaleness(t, sqliteStores) }

func testRestartKeepsStaleness(t *testing.T, stores storeOpener) {
	for _, tc := range []struct {
		name string
		gaps []time.Duration // between the node's batches before the restart
		wait time.Duration   // from its last batch to the question
		live bool
		lag  time.Duration // of the node's clock behind the judge's (negative: ahead)
	}{
		{"steady", []time.Duration{30 * time.Second, 30 * time.Second}, time.Minute, true, 0},
		{"silent since a batch after an outage", []time.Duration{30 * time.Second, 10 * time.Minute}, 2 * time.Minute, false, 0},
		{"a batch sent early", []time.Duration{30 * time.Second, 2 * time.Second}, time.Minute, true, 0},
		{"a clock a minute behind", []time.Duration{30 * time.Second, 30 * time.Second}, time.Minute, true, time.Minute},
		{"a clock 25 s ahead, silent", []time.Duration{30 * time.Second, 30 * time.Second}, 100 * time.Second, false, -25 * time.Second},
		// Every stored batch is dated past the clock at the restart: the rebuild reads as far
		// ahead as the judge admits a batch (maxAhead), and dates the node's last batch by
		// its offset, not by the first of them it replays. Such a node was not listed
		// until its next batch.
		{"a clock 5 min ahead", []time.Duration{30 * time.Second, 30 * time.Second}, time.Minute, true, -5 * time.Minute},
		{"a clock 5 min ahead, silent", []time.Duration{30 * time.Second, 30 * time.Second}, 2 * time.Minute, false, -5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: t0}
			start := restartable(t, stores(t, c), c, Options{Algorithm: "leastload",
				Filters: lbplugins.Filters{DefaultInterval: 10 * time.Second, StaleIntervals: 3}})
			batch := func() metric.Batch { b := wave("wave-a", c.Now().Add(-tc.lag), 30, 2); b.IntervalS = 30; return b }
			before, stop := start()
			require.NoError(t, before.Ingest(batch(), sourceHTTP))
			for _, gap := range tc.gaps {
				c.Add(gap)
				require.NoError(t, before.Ingest(batch(), sourceHTTP))
			}
			c.Add(tc.wait)
			want := liveness(t, before)
			require.Equal(t, tc.live, want.live, "before the restart")
			stop()

			after, stop := start()
			defer stop()
			require.Equal(t, want, liveness(t, after), "after the restart")
		})
	}
}

// nodeLiveness is what a judge says of wave-a's liveness: in GET /v1/nodes and to a
// placement.
type nodeLiveness struct {
	live, placeable bool
	intervalS       float64
}

func liveness(t *testing.T, j *Judge) nodeLiveness {
	t.Helper()
	ss := j.summaries()
	i := slices.IndexFunc(ss, func(s nodeSummary) bool { return s.Node == "wave-a" })
	require.GreaterOrEqual(t, i, 0, "wave-a is listed")
	_, err := j.Place(api.PlacementRequest{Instance: "probe", DryRun: true})
	if err != nil {
		require.ErrorIs(t, err, lbplugins.ErrNoCandidates)
	}
	return nodeLiveness{live: ss[i].Live, placeable: err == nil, intervalS: ss[i].IntervalS}
}

// The status page's wave instances come back after a restart, with their age: they were
// recorded only from live batches, so a restarted judge listed none (wave-5's e1,
// "running 46s ago" before the restart, was gone while GET /v1/nodes/wave-5 still
// listed it) until each node's next batch. The rebuild takes them from the stored
// points, the latest batch of each node that carried its wave's.
func TestRestartKeepsInstanceStates(t *testing.T) { testRestartKeepsInstanceStates(t, sqliteStores) }

func testRestartKeepsInstanceStates(t *testing.T, stores storeOpener) {
	c := &clock{t: t0}
	open := stores(t, c)
	start := restartable(t, open, c, Options{})

	before, stop := start()
	require.NoError(t, before.Ingest(statusBatch("wave-5", c.Now().Add(-20*time.Second), 10*time.Second,
		instRunning("e1", "error", "access_denied", 0), instRunning("e2", stateRunning, "", 1)), sourceHTTP))
	require.NoError(t, before.Ingest(statusBatch("wave-5", c.Now(), 10*time.Second,
		instRunning("e1", stateRunning, "", 1), instRunning("e3", "retrying", "binlog_purged", 0)), sourceHTTP))
	require.NoError(t, before.Ingest(statusBatch("wave-6", c.Now(), 10*time.Second), sourceHTTP)) // no instance
	c.Add(6 * time.Second)
	want := before.states.list([]string{"wave-5", "wave-6"})
	require.Len(t, want, 2)
	stop()

	c.Add(40 * time.Second)
	after, _ := start()
	got := after.states.list(after.inc.NodeIDs())
	require.Equal(t, want, got, "the instance states of each node's latest batch, as of that batch")
	r := do(t, after.Handler(), "GET", "/", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	page := string(r.body)
	require.Contains(t, page, "Wave instances (2)")
	// wave-5 has been stale since (46 s, its interval 10 s): its states are what it last
	// said, not vouched for.
	for _, row := range []string{
		"<td>wave-5</td><td>e1</td><td class=\"stale\">not reported</td><td></td><td><small>the node stopped reporting; it last said running</small>",
		"<td>wave-5</td><td>e3</td><td class=\"stale\">not reported</td><td></td><td><small>the node stopped reporting; it last said retrying (binlog_purged)</small>",
	} {
		require.Contains(t, page, row)
	}
	require.Contains(t, page, "46s ago", "e1's age: reported 46 s before")
	require.NotContains(t, page, "<td>e2</td>", "an older batch's instance")
}
