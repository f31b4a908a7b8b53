package lbplugins

import (
	"cmp"
	"math"
	"slices"
)

// likelySet is, per snapshot, the nodes that pass every common filter a request does not
// decide: seen, fresh when the snapshot was built, a wave, and under every threshold. Most
// rounds exclude one node or none and find every likely node still fresh, so their
// candidates are this list less the excluded, found without testing each node against
// each filter (Decide's fast path).
type likelySet struct {
	nodes  []int  // in node order
	others []int  // every other node: each is filtered (stale or over a threshold)
	built  int64  // the snapshot's build time: a node stale then is stale at any later time
	fresh  int64  // the earliest staleAt among nodes: until then none is stale
	masks  uint64 // bit m set when a likely node reports exactly the resources of mask m
	// What pass would compute over all of nodes: the resources they report, how many
	// report each (to take an excluded node's out), and nodes by age, oldest first.
	reports uint8
	count   [numRes]int32
	byAge   []int
}

func (s *Snapshot) fillLikely() {
	l := &s.likely
	l.built, l.fresh = s.BuiltAt.UnixNano(), math.MaxInt64
	for i := range s.Views {
		if s.lastSeen[i] == 0 || s.staleAt[i] < l.built || s.blocked(i) {
			l.others = append(l.others, i)
			continue
		}
		l.nodes = append(l.nodes, i)
		l.fresh = min(l.fresh, s.staleAt[i])
		l.masks |= 1 << s.reports[i]
		l.reports |= s.reports[i]
		for res := range numRes {
			if s.reports[i]&(1<<res) != 0 {
				l.count[res]++
			}
		}
	}
	l.byAge = slices.Clone(l.nodes)
	slices.SortStableFunc(l.byAge, func(a, b int) int { return cmp.Compare(s.lastSeen[a], s.lastSeen[b]) })
}

// allReport reports whether every likely node reports one of the resources in reads
// (a ResourceReader's mask; 0 reads nothing in particular).
func (l *likelySet) allReport(reads uint8) bool {
	if reads == 0 {
		return true
	}
	for m := range uint8(1 << numRes) {
		if l.masks&(1<<m) != 0 && m&reads == 0 {
			return false
		}
	}
	return true
}

// fits reports whether Decide may take the fast path for a round: the plugin has no
// data filter, every likely node is fresh at now and reports what the plugin reads, and
// the answer lists no filtered node (an explain=all answer names each). A plugin's own
// node filter runs over the likely candidates (passLikely). A decision timed before the
// snapshot's build goes node by node.
func (l *likelySet) fits(pf filters, now int64, explainAll bool) bool {
	return !explainAll && pf.data == nil && len(l.nodes) > 0 &&
		l.built <= now && now <= l.fresh && l.allReport(pf.reads)
}

// slowFilters turns Decide's fast path off, for the test that compares both paths.
var slowFilters = false

// passLikely makes the likely nodes that are not excluded, and that the plugin's own
// node filter passes, the round's candidates, with what pass computes for each, and
// counts the others' filters into c. It returns the oldest candidate (-1 when none is
// left) and the resources the candidates report. Its cost is a copy of the list and one
// store per candidate, plus a little per exclusion and reservation (and a call of the
// plugin's filter per candidate).
func (r *Round) passLikely(now int64, pf filters, c *FilterCounts) (int, uint8) {
	s, l := r.Snap, &r.Snap.likely
	for _, i := range l.others {
		why, _ := r.filter(i, now, pf)
		c.add(why)
	}
	cands := append(r.Cands[:0], l.nodes...)
	anyMask, count, dropped := l.reports, l.count, false
	pend := r.pend
	for _, i := range r.marked[:r.nExcluded] {
		k, ok := slices.BinarySearch(cands, i)
		if !ok {
			continue // not likely, or listed twice
		}
		cands = slices.Delete(cands, k, k+1)
		c.Excluded++
		dropped = true
		for res := range numRes {
			if s.reports[i]&(1<<res) != 0 {
				if count[res]--; count[res] == 0 {
					anyMask &^= 1 << res
				}
			}
		}
	}
	if pf.node != nil {
		// The likely nodes pass every common filter: the plugin's is the one left.
		kept := 0
		for _, i := range cands {
			if pf.node.Filter(r, i) != "" {
				c.Plugin++
				continue
			}
			cands[kept] = i
			kept++
		}
		if kept < len(cands) {
			cands, dropped = cands[:kept], true
			anyMask = 0
			for _, i := range cands {
				anyMask |= s.reports[i]
			}
		}
	}
	isCand, pendCands := r.isCand, r.pendCands[:0]
	for k, i := range cands {
		isCand[i] = true
		if pend[i] != 0 {
			pendCands = append(pendCands, k)
		}
	}
	oldest := -1
	for _, i := range l.byAge {
		if !dropped || isCand[i] {
			oldest = i
			break
		}
	}
	r.Cands, r.pendCands = cands, pendCands
	return oldest, anyMask
}
