package lbplugins

// Precomposed is the Composite of every node of a snapshot for one set of weights,
// within the scope of the nodes that are likely candidates (live, with data, under
// every threshold), computed once per snapshot. Most rounds of leastload have that
// scope (no node of the top level excluded, no reservation raising a level above it),
// and then scoring is a gather from vals instead of a pass per resource: CompositeAll
// checks the round's scope against it and falls back when it differs.
type Precomposed struct {
	sc   Scope
	vals []float64
}

// Precompose computes the composites of s's nodes for weights w (see Precomposed).
func Precompose(s *Snapshot, w *Weights) *Precomposed {
	p := &Precomposed{vals: make([]float64, len(s.Views))}
	for res := range numRes {
		p.sc.maxRel[res] = 1
	}
	likely := func(i int) bool { return s.lastSeen[i] != 0 && !s.blocked(i) }
	for i := range s.Views {
		if !likely(i) {
			continue
		}
		for res := range numRes {
			if s.kind[res][i] != kindMissing {
				p.sc.any[res] = true
			}
		}
	}
	for res := range numRes {
		for _, i := range s.byLevel[res] {
			if likely(int(i)) {
				p.sc.maxRel[res] = s.raw[res][i]
				break
			}
		}
	}
	total := 0.0
	for res := range numRes {
		if p.sc.any[res] {
			total += w[res]
		}
	}
	if total == 0 {
		return p
	}
	// The same sums, in the same order, as compositeFree's loops: bit for bit.
	for res := range numRes {
		wr := w[res]
		if !p.sc.any[res] || wr == 0 {
			continue
		}
		coef := 100 * wr / total
		free, kind, raw, maxRel := s.free[res], s.kind[res], s.raw[res], p.sc.maxRel[res]
		for i := range p.vals {
			if kind[i] != kindRel {
				p.vals[i] += coef * free[i]
				continue
			}
			p.vals[i] += coef * (1 - relUsage(raw[i], maxRel))
		}
	}
	return p
}

// fits reports whether sc is the scope p was computed in, on the resources w weighs.
func (p *Precomposed) fits(sc *Scope, w *Weights) bool {
	if p == nil || p.sc.any != sc.any {
		return false
	}
	for res := range numRes {
		if w[res] != 0 && sc.any[res] && p.sc.maxRel[res] != sc.maxRel[res] {
			return false
		}
	}
	return true
}

// relUsage is a relative level's utilisation: clamp01(raw / maxRel) inline, NaN as 1.
func relUsage(raw, maxRel float64) float64 {
	u := raw / maxRel
	if !(u < 1) {
		return 1
	} else if u < 0 {
		return 0
	}
	return u
}
