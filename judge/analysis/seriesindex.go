package analysis

import (
	"hash/maphash"
	"maps"
	"math/bits"
)

// seriesIndex finds a node's series for every point without building a key string (the
// name plus sorted, encoded labels would cost allocations per point): node-level series
// by name, labelled ones by a hash of the name and labels, with an equality check so that
// two series whose hashes collide stay apart. It keeps what the judge's liveness check
// reads of the wave.* series as they change (Incremental.Liveness), so that the check
// reads no series: how many there are, and the newest batch time of their samples.
type seriesIndex struct {
	plain    map[string]*seriesState
	labelled map[uint64]*seriesState // chained through seriesState.next
	size     int                     // series in all
	waves    int                     // wave.* series among them
	waveTS   int64                   // the largest lastTS of the wave.* series (0: none has a time)
}

func newSeriesIndex() seriesIndex {
	return seriesIndex{plain: map[string]*seriesState{}, labelled: map[uint64]*seriesState{}}
}

// get returns the series, created empty on its first point.
func (x *seriesIndex) get(seed maphash.Seed, name string, labels map[string]string) *seriesState {
	if len(labels) == 0 {
		s := x.plain[name]
		if s == nil {
			s = newSeries(name, nil)
			x.plain[name] = s
			x.added(s)
		}
		return s
	}
	h := labelsHash(seed, name, labels)
	head := x.labelled[h]
	for s := head; s != nil; s = s.next {
		if s.name == name && s.sameLabels(labels) {
			return s
		}
	}
	// The batch's map may be reused by its sender: the series keeps its own copy.
	s := newSeries(name, maps.Clone(labels))
	s.next = head
	x.labelled[h] = s
	x.added(s)
	return s
}

func (x *seriesIndex) added(s *seriesState) {
	x.size++
	if s.wave {
		x.waves++
	}
}

// stamp dates series s's sample by its batch's time ts (UnixNano), newer than its last.
func (x *seriesIndex) stamp(s *seriesState, ts int64) {
	s.lastTS = ts
	if s.wave && ts > x.waveTS {
		x.waveTS = ts
	}
}

// labelsHash hashes the name and the label pairs. Map order is random, so the pairs'
// hashes are summed, which does not depend on it.
func labelsHash(seed maphash.Seed, name string, labels map[string]string) uint64 {
	var sum uint64
	for k, v := range labels {
		sum += mix(maphash.String(seed, k), maphash.String(seed, v))
	}
	return mix(maphash.String(seed, name), sum)
}

// mix combines two hashes asymmetrically (k=v1,v=v2 differs from k=v2,v=v1).
func mix(a, b uint64) uint64 { return (bits.RotateLeft64(a, 27) ^ b) * 0x9e3779b97f4a7c15 }

type labelPair struct{ k, v string }

func pairsOf(labels map[string]string) []labelPair {
	out := make([]labelPair, 0, len(labels))
	for k, v := range labels {
		out = append(out, labelPair{k, v})
	}
	return out
}

// sameLabels compares by lookups in labels, which is cheaper than ranging over a map.
func (s *seriesState) sameLabels(labels map[string]string) bool {
	if len(labels) != len(s.pairs) {
		return false
	}
	for _, p := range s.pairs {
		if v, ok := labels[p.k]; !ok || v != p.v {
			return false
		}
	}
	return true
}

// each calls fn for every series.
func (x *seriesIndex) each(fn func(*seriesState)) {
	for _, s := range x.plain {
		fn(s)
	}
	for _, head := range x.labelled {
		for s := head; s != nil; s = s.next {
			fn(s)
		}
	}
}

// roll rolls every series over to a new hour and drops those it reports stale; the
// wave.* series' count and newest time are those of the series kept.
func (x *seriesIndex) roll() {
	x.waves, x.waveTS = 0, 0
	keep := func(s *seriesState) bool {
		if !s.roll() {
			x.size--
			return false
		}
		if s.wave {
			x.waves++
			x.waveTS = max(x.waveTS, s.lastTS)
		}
		return true
	}
	for name, s := range x.plain {
		if !keep(s) {
			delete(x.plain, name)
		}
	}
	for h, head := range x.labelled {
		var kept *seriesState
		for s := head; s != nil; {
			next := s.next
			if keep(s) {
				s.next, kept = kept, s
			}
			s = next
		}
		if kept == nil {
			delete(x.labelled, h)
		} else {
			x.labelled[h] = kept
		}
	}
}
