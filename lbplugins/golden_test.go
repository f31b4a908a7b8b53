package lbplugins_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/lbplugins"
	"github.com/binlake/binlake/lbplugins/internal/cluster"
)

var update = flag.Bool("update", false, "rewrite testdata/decisions.golden.json from the current code")

// goldenDecision is what a decision must keep: the chosen node, the best candidates with
// their scores and parts, and the filtered nodes with their reasons.
type goldenDecision struct {
	Case     string               `json:"case"`
	Node     string               `json:"node"`
	Top      []goldenScore        `json:"top"`
	Filtered []lbplugins.Filtered `json:"filtered"`
	Err      string               `json:"err,omitempty"`
}

type goldenScore struct {
	Node  string             `json:"node"`
	Score float64            `json:"score"`
	Parts map[string]float64 `json:"parts"`
}

// goldenCluster is a random cluster with the situations the filters and plugins treat
// specially: stale nodes, a hot node, a node that reports only some resources, a node
// that declares its cores and one that does not.
func goldenCluster(n int, seed uint64) []*lbplugins.NodeView {
	nodes := cluster.Random(n, seed)
	cluster.Stale(nodes[1], 2*time.Minute)
	nodes[2].Current[lbplugins.CPUUtil] = lbplugins.Current{Count: 60, Mean: 97, EWMA: 97, Last: 97, Max: 97, Min: 97, P95: 97}
	delete(nodes[3].Current, lbplugins.MemUsedPct)
	delete(nodes[3].Current, lbplugins.WaveTPS)
	delete(nodes[4].Current, lbplugins.CPUCores)
	delete(nodes[5].History, lbplugins.CPUUtil)
	return nodes
}

// TestGoldenDecisions pins every plugin's decisions on crafted clusters to the ones the
// judge gave before placements moved to snapshots (recorded with -update at that time),
// so a faster implementation cannot change an answer unnoticed.
func TestGoldenDecisions(t *testing.T) {
	filters := lbplugins.Filters{Thresholds: map[string]float64{"cpu.util": 90, "mem.used_pct": 95}}
	var got []goldenDecision
	for _, algo := range lbplugins.Names() {
		for _, size := range []int{7, 60, 400} {
			for seed := uint64(1); seed <= 3; seed++ {
				p, err := lbplugins.New(algo, lbplugins.Settings{Seed: seed})
				require.NoError(t, err)
				nodes := goldenCluster(size, seed)
				req := lbplugins.Request{Instance: "orders", Exclude: []string{"wave-0000"}}
				for round := 0; round < 2; round++ { // a second draw for random and p2c
					g := goldenDecision{Case: fmt.Sprintf("%s/nodes=%d/seed=%d/round=%d", algo, size, seed, round)}
					d, err := lbplugins.Decide(p, filters, req, nodes, cluster.Now)
					if err != nil {
						g.Err = err.Error()
					}
					g.Node, g.Filtered = d.Node, d.Filtered
					for i, s := range d.Scores {
						if i == 10 {
							break
						}
						g.Top = append(g.Top, goldenScore{Node: s.Node, Score: s.Value, Parts: scoreParts(s)})
					}
					got = append(got, g)
				}
			}
		}
	}
	path := filepath.Join("testdata", "decisions.golden.json")
	if *update {
		data, err := json.MarshalIndent(got, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var want []goldenDecision
	require.NoError(t, json.Unmarshal(data, &want))
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i], got[i], want[i].Case)
	}
}

func scoreParts(s lbplugins.Score) map[string]float64 { return s.Parts.Map() }
