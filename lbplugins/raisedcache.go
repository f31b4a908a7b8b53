package lbplugins

import "math"

// raisedCache keeps, across the rounds one pooled Round serves, the largest level of
// each relative resource among the reserved candidates, raised by their reservations
// (what scopeOfCands adds to the unreserved largest level). Under a burst of placements
// every node is reserved, and the pass that raises them costs a pass per relative
// resource over every node; between two rounds of one Round few nodes gain or lose a
// reservation or stop being a candidate, so a compare per node finds them and only
// those are raised again. A maximum survives the loss of any node but the one holding
// it: when that one drops or falls, the resource is computed afresh.
type raisedCache struct {
	snap *Snapshot
	rel  [numRes]bool
	pend []float64 // the reservations node i counted with: 0 when it was no candidate
	top  [numRes]float64
	at   [numRes]int // the node holding top; -1 when none
}

// raise lifts sc.maxRel of the relative resources rel by the reserved candidates.
func (r *Round) raise(sc *Scope, rel []int) {
	c, s := &r.raised, r.Snap
	var relSet [numRes]bool
	for _, res := range rel {
		relSet[res] = true
	}
	n := len(s.Views)
	if c.snap != s || c.rel != relSet || len(c.pend) != n {
		c.snap, c.rel = s, relSet
		if cap(c.pend) < n {
			c.pend = make([]float64, n)
		}
		c.pend = c.pend[:n]
		for i := range c.pend {
			c.pend[i] = r.countedPend(i)
		}
		for _, res := range rel {
			c.recompute(s, res)
		}
	} else {
		var stale [numRes]bool
		pend, isCand, cp := r.pend, r.isCand, c.pend[:n]
		for i := range cp {
			p := 0.0
			if isCand[i] {
				p = pend[i]
			}
			if p == cp[i] {
				continue
			}
			cp[i] = p
			for _, res := range rel {
				if s.kind[res][i] != kindRel {
					continue
				}
				v := s.raw[res][i] + p*s.demand[res]
				if c.at[res] == i {
					if p == 0 || !(v >= c.top[res]) { // the holder left or fell
						stale[res] = true
					} else {
						c.top[res] = v
					}
					continue
				}
				if p != 0 && v > c.top[res] {
					c.top[res], c.at[res] = v, i
				}
			}
		}
		for _, res := range rel {
			if stale[res] {
				c.recompute(s, res)
			}
		}
	}
	for _, res := range rel {
		if c.top[res] > sc.maxRel[res] {
			sc.maxRel[res] = c.top[res]
		}
	}
}

// countedPend is node i's reservations if it is a candidate of the round, else 0.
func (r *Round) countedPend(i int) float64 {
	if r.isCand[i] {
		return r.pend[i]
	}
	return 0
}

// recompute finds res's largest raised level among the nodes c.pend counts.
func (c *raisedCache) recompute(s *Snapshot, res int) {
	kind, raw, demand := s.kind[res], s.raw[res], s.demand[res]
	top, at := math.Inf(-1), -1
	for i, p := range c.pend {
		if p != 0 && kind[i] == kindRel {
			if v := raw[i] + p*demand; v > top {
				top, at = v, i
			}
		}
	}
	c.top[res], c.at[res] = top, at
}
