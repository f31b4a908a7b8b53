package lbplugins_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
)

// TestFastFiltersDecideAsEach compares Decide's fast path (the snapshot's likely nodes
// less the excluded) with the filters run node by node, for every plugin, on clusters
// with stale, never-seen, over-threshold, partly reporting, waveless and stopped-wave
// nodes, with and without exclusions and reservations, and at times when likely nodes
// turn stale.
func TestFastFiltersDecideAsEach(t *testing.T) {
	filters := lbplugins.Filters{Thresholds: map[string]float64{lbplugins.CPUUtil: 70}}
	for seed := range uint64(6) {
		nodes := cluster.Random(200, seed)
		for i, n := range nodes {
			n.LastSeen = n.LastSeen.Add(-time.Duration((i*7)%3) * time.Second)
			if i == 2 { // the oldest, under the threshold, excluded below
				n.LastSeen = n.LastSeen.Add(-4 * time.Second)
				n.Current[lbplugins.CPUUtil] = lbplugins.Current{Count: 60, Mean: 10, Min: 10, Max: 10, Last: 10, EWMA: 10, P95: 10}
			}
			if seed == 5 && i != 3 { // wave-0003 alone reports the TPS, and is excluded below
				delete(n.Current, lbplugins.WaveTPS)
			}
			switch {
			case i%13 == 0:
				n.LastSeen = time.Time{}
			case i%7 == 0:
				cluster.Stale(n, time.Hour)
			case i%5 == 0:
				delete(n.Current, lbplugins.WaveTPS)
				delete(n.Current, lbplugins.NetRxBps)
			}
			if seed >= 3 { // the fleet reports its waves: some hosts run none, some waves stopped
				switch {
				case i%11 == 0:
					n.Wave = lbplugins.WaveUnknown
				case i%17 == 0:
					n.Wave = lbplugins.WaveStopped
				default:
					n.Wave = lbplugins.WaveRunning
				}
			}
			if seed%2 == 1 && i%3 == 0 { // some nodes report the wave's figures only
				for _, m := range []string{lbplugins.CPUUtil, lbplugins.MemUsedPct, lbplugins.Load1} {
					delete(n.Current, m)
				}
			}
		}
		for _, algo := range lbplugins.Names() {
			p, err := lbplugins.New(algo, lbplugins.Settings{Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			snap := lbplugins.NewSnapshot(nodes, filters, cluster.Now, p)
			rv := lbplugins.NewReserved(snap)
			for i := range 200 {
				if i%(int(seed)+2) == 0 {
					rv.Add(i, int32(i%4))
					rv.AddCores(i, 0.5*float64(i%4))
				}
			}
			// The expected work and the cap take some waves over it (utilisation's filter).
			work := lbplugins.Work{Rows: 5000, Bytes: 1e7}
			for _, c := range []struct {
				name string
				req  lbplugins.Request
				at   time.Time
			}{
				{"plain", lbplugins.Request{Instance: "orders"}, cluster.Now},
				{"capped", lbplugins.Request{Instance: "orders", Expected: work, MaxUtilisation: 0.7, Reserved: rv, Exclude: []string{"wave-0004"}}, cluster.Now},
				{"exclude", lbplugins.Request{Instance: "orders", Exclude: []string{"wave-0001", "wave-0002", "wave-0003", "wave-0013", "nope", "wave-0002"}}, cluster.Now},
				{"reserved", lbplugins.Request{Instance: "orders", Exclude: []string{"wave-0004"}, Reserved: rv}, cluster.Now},
				{"top", lbplugins.Request{Instance: "orders", TopK: 50, Reserved: rv}, cluster.Now},
				{"later", lbplugins.Request{Instance: "orders"}, cluster.Now.Add(26 * time.Second)},
			} {
				t.Run(fmt.Sprintf("seed=%d/%s/%s", seed, algo, c.name), func(t *testing.T) {
					fast, ferr := snap.Decide(p, c.req, c.at)
					undo := lbplugins.SlowFilters()
					each, eerr := snap.Decide(p, c.req, c.at)
					undo()
					if algo == "random" || algo == "p2c" { // they draw anew on every decision
						fast.Node, fast.Scores, each.Node, each.Scores = "", nil, "", nil
					}
					if fmt.Sprint(ferr) != fmt.Sprint(eerr) || !reflect.DeepEqual(fast, each) {
						t.Fatalf("fast path:\n%.600v %v\nnode by node:\n%.600v %v", fmt.Sprintf("%+v", fast), ferr, fmt.Sprintf("%+v", each), eerr)
					}
				})
			}
		}
	}
}
