package lbplugins

import "math"

// Composites scores the candidates of one round of s (the nodes with data under every
// threshold, less req.Exclude, with req.Reserved pending) with weights w two ways:
// CompositeAll over the precomputed composites, and Composite node by node. They must be
// equal bit for bit.
func Composites(s *Snapshot, req Request, w Weights) (all, each []uint64) {
	r := s.round(req)
	defer r.release()
	sc := passAll(r)
	out := make([]float64, len(r.Cands))
	r.CompositeAll(sc, &w, Precompose(s, &w), out)
	for k, i := range r.Cands {
		all = append(all, math.Float64bits(out[k]))
		each = append(each, math.Float64bits(r.Composite(sc, &w, i, nil)))
	}
	return all, each
}

// CompositeStorm scores the candidates of rounds rounds of s on one Round, as a pooled
// Round serves decision after decision, with reqOf(i) the request of round i (call
// reservations change between rounds there). It returns per round that Round's
// CompositeAll (through its caches of composites and raised levels) and, from a fresh
// Round with nothing cached, Composite node by node. They must be equal bit for bit.
func CompositeStorm(s *Snapshot, w Weights, rounds int, reqOf func(i int) Request) (all, each [][]uint64) {
	pooled := new(Round)
	pre := Precompose(s, &w)
	score := func(r *Round, req Request, fresh bool) []uint64 {
		s.setRound(r, req)
		defer r.reset()
		sc := passAll(r)
		var bits []uint64
		if fresh {
			for _, i := range r.Cands {
				bits = append(bits, math.Float64bits(r.Composite(sc, &w, i, nil)))
			}
			return bits
		}
		out := make([]float64, len(r.Cands))
		r.CompositeAll(sc, &w, pre, out)
		for k := range r.Cands {
			bits = append(bits, math.Float64bits(out[k]))
		}
		return bits
	}
	for it := range rounds {
		req := reqOf(it)
		all = append(all, score(pooled, req, false))
		each = append(each, score(new(Round), req, true))
	}
	return all, each
}

// passAll makes every node of the round's snapshot with data under every threshold a
// candidate, unless excluded, and returns the candidates' scope.
func passAll(r *Round) *Scope {
	var mask uint8
	oldest := -1
	for i := range r.Snap.Views {
		if !r.excluded[i] && r.Snap.lastSeen[i] != 0 && r.Snap.over[i] == 0 {
			r.pass(i, &mask, &oldest)
		}
	}
	r.anyMask, r.allDone = mask, false
	return r.AllScope()
}

// SlowFilters makes Decide run its filters node by node until the returned func is
// called (not safe alongside other decisions).
func SlowFilters() (undo func()) {
	slowFilters = true
	return func() { slowFilters = false }
}
