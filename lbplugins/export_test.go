package lbplugins

import "math"

// Composites scores the candidates of one round of s (the nodes with data under every
// threshold, less req.Exclude, with req.Reserved pending) with weights w two ways:
// CompositeAll over the precomputed composites, and Composite node by node. They must be
// equal bit for bit.
func Composites(s *Snapshot, req Request, w Weights) (all, each []uint64) {
	r := s.round(req)
	defer r.release()
	var mask uint8
	oldest := -1
	for i := range s.Views {
		if !r.excluded[i] && s.lastSeen[i] != 0 && s.over[i] == 0 {
			r.pass(i, &mask, &oldest)
		}
	}
	r.anyMask, r.allDone = mask, false
	sc := r.AllScope()
	out := make([]float64, len(r.Cands))
	r.CompositeAll(sc, &w, Precompose(s, &w), out)
	for k, i := range r.Cands {
		all = append(all, math.Float64bits(out[k]))
		each = append(each, math.Float64bits(r.Composite(sc, &w, i, nil)))
	}
	return all, each
}

// SlowFilters makes Decide run its filters node by node until the returned func is
// called (not safe alongside other decisions).
func SlowFilters() (undo func()) {
	slowFilters = true
	return func() { slowFilters = false }
}
