package lbplugins

// compositeCache keeps, across the rounds one pooled Round serves, the pending-raised
// composites of the nodes it scored, with the pending count each was computed at. Under
// a burst of placements every node has reservations, and scoring them all costs a pass
// per resource over every candidate (most of a decision's time); between two rounds of
// one Round only the nodes that gained or lost a reservation change, so only those are
// scored again. Entries hold only while the snapshot, the weights and the scope are the
// ones they were computed in; any change drops them all. Values are Composite's, bit for
// bit, whichever way they were computed.
type compositeCache struct {
	snap *Snapshot
	w    Weights
	sc   Scope
	pend []float64 // the pending count a node's entry was computed at; -1: none
	vals []float64
}

// valid reports whether the entries were computed in sc with w on the round's snapshot,
// and otherwise empties the cache and keys it so.
func (c *compositeCache) valid(r *Round, sc *Scope, w *Weights) bool {
	if c.snap == r.Snap && c.w == *w && c.sc == *sc {
		return true
	}
	n := len(r.Snap.Views)
	if cap(c.pend) < n {
		c.pend, c.vals = make([]float64, n), make([]float64, n)
	}
	c.pend, c.vals = c.pend[:n], c.vals[:n]
	for i := range c.pend {
		c.pend[i] = -1
	}
	c.snap, c.w, c.sc = r.Snap, *w, *sc
	return false
}

// compositeCached is CompositeAll when reservations are pending on many candidates.
func (r *Round) compositeCached(sc *Scope, w *Weights, out []float64) {
	c := &r.cache
	if !c.valid(r, sc, w) {
		r.compositeEach(sc, w, true, out)
		for k, i := range r.Cands {
			c.pend[i], c.vals[i] = r.pend[i], out[k]
		}
		return
	}
	pend, cp, cv := r.pend, c.pend, c.vals
	for k, i := range r.Cands {
		if cp[i] == pend[i] {
			out[k] = cv[i]
			continue
		}
		v := r.Composite(sc, w, i, nil)
		out[k], cp[i], cv[i] = v, pend[i], v
	}
}
