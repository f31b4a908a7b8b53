package lbplugins

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Score is one candidate's score (0–100) and its parts. Parts add up to Value for the
// weighted-sum plugins; others carry the raw inputs that explain the score. Pending is
// the node's reserved instances that the score counted.
type Score struct {
	Node    string  `json:"node"`
	Value   float64 `json:"score"`
	Parts   Parts   `json:"parts"`
	Pending float64 `json:"pending,omitempty"`
}

// Filtered is a node that may not take the instance, with the reason.
type Filtered struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// FilterCounts count the filtered nodes per reason.
type FilterCounts struct {
	Excluded      int `json:"excluded,omitempty"`
	Stale         int `json:"stale,omitempty"`
	NoData        int `json:"no_data,omitempty"`
	OverThreshold int `json:"over_threshold,omitempty"`
	Plugin        int `json:"plugin,omitempty"`
	// NoWave counts the nodes without wave series while others have them (a host
	// without a wave), WaveStopped those whose wave series stopped (NodeView.Wave).
	NoWave      int `json:"no_wave,omitempty"`
	WaveStopped int `json:"wave_stopped,omitempty"`
}

// Total is the number of filtered nodes.
func (c FilterCounts) Total() int {
	return c.Excluded + c.Stale + c.NoData + c.OverThreshold + c.Plugin + c.NoWave + c.WaveStopped
}

// Decision is the outcome of one placement.
type Decision struct {
	Node      string
	Algorithm string
	// Candidates is how many nodes passed the filters and were scored.
	Candidates int
	// Scores are the best Request.TopK candidates, best first; every candidate with
	// Request.ExplainAll.
	Scores []Score
	// FilteredBy counts the filtered nodes per reason. Filtered lists each with its
	// reason, sorted by node, only with Request.ExplainAll.
	FilteredBy FilterCounts
	Filtered   []Filtered
	// DataAsOf is the oldest LastSeen among the scored candidates: every score rests on
	// data at least this fresh.
	DataAsOf time.Time
	// Note is what the plugin says of how it decided (the utilisation plugin: what it
	// scored by, or that it fell back); empty for most.
	Note string
}

// The reasons of the common filters that say a node is no wave to place on.
const (
	ReasonNoWave      = "no wave: the node reports no wave.* series while other nodes do (a host without a wave, or one whose agent scrapes none)"
	ReasonWaveStopped = "wave stopped: its wave.* series stopped while its host's metrics go on (its wave is down or no longer scraped)"
)

// ErrNoCandidates is returned (wrapped, with the reasons) when every node was filtered.
var ErrNoCandidates = errors.New("no live node can take the instance")

// Round is one decision in progress: the snapshot, the request, the candidates that
// passed the filters and the scratch space plugins share with the decision. Rounds are
// pooled; a plugin must not keep one after Score or Explain returns.
type Round struct {
	Snap *Snapshot
	Req  Request
	// Prepared is what the plugin's Prepare returned for Snap.
	Prepared any
	// NextHour is the UTC hour after Req.Now, for hour-of-day profiles.
	NextHour int
	// staleNs is when staleness is judged (Request.staleNs), once per round: Passes asks
	// it of every node.
	staleNs int64
	// Cands are the candidates' node indices, in node-name order.
	Cands   []int
	all     Scope // the scope of every candidate, once AllScope computed it
	allDone bool
	anyMask uint8
	// Scores are the plugin's raw scores of the candidates, set once Score returns.
	Scores []float64
	// Drawn is scratch for plugins that draw candidates (p2c): positions in Cands.
	// Vec is scratch for a per-resource vector that Score computes and Explain reuses
	// (balanced's demand).
	Drawn []int
	Vec   [NumResources]float64
	// State is the plugin's own for this round, set by its Start (Starter); Note is
	// what it says of the decision (Decision.Note). Both start empty.
	State int
	Note  string

	algorithm string
	runsOn    int       // Req.RunsOn's node index, or -1
	pend      []float64 // pending instances per node index
	explain   bool      // filter reasons are shown (explain all, or no candidate)
	excluded  []bool
	marked    []int // node indices whose pend or excluded must be reset: the excluded first
	nExcluded int   // how many of marked are the request's exclusions
	isCand    []bool
	pendCands []int // positions in Cands of the candidates with pending reservations
	final     []float64
	order     []int
	cache     compositeCache
	raised    raisedCache
}

var rounds = sync.Pool{New: func() any { return new(Round) }}

func (s *Snapshot) round(req Request) *Round {
	r := rounds.Get().(*Round)
	s.setRound(r, req)
	return r
}

// setRound readies r, fresh or reset, for a decision on s.
func (s *Snapshot) setRound(r *Round, req Request) {
	r.Snap, r.Req, r.staleNs = s, req, req.staleNs()
	n := len(s.Views)
	if cap(r.pend) < n {
		r.pend, r.excluded, r.isCand = make([]float64, n), make([]bool, n), make([]bool, n)
	}
	r.pend, r.excluded, r.isCand = r.pend[:n], r.excluded[:n], r.isCand[:n]
	r.explain = req.ExplainAll
	r.Cands, r.Drawn, r.marked, r.pendCands = r.Cands[:0], r.Drawn[:0], r.marked[:0], r.pendCands[:0]
	for _, name := range req.Exclude {
		if i, ok := s.index[name]; ok {
			r.excluded[i] = true
			r.marked = append(r.marked, i)
		}
	}
	r.nExcluded = len(r.marked)
	r.runsOn = -1
	if i, ok := s.index[req.RunsOn]; ok && req.RunsOn != "" {
		r.runsOn = i
	}
	if rv := req.Reserved; rv != nil && len(rv.n) == n {
		for i := range rv.n {
			if c := rv.n[i].Load(); c > 0 {
				r.pend[i] += float64(c)
				r.marked = append(r.marked, i)
			}
		}
	}
}

func (r *Round) release() {
	r.reset()
	rounds.Put(r)
}

// reset clears what a decision marked, keeping the scratch space and the cache.
func (r *Round) reset() {
	for _, i := range r.marked {
		r.pend[i], r.excluded[i] = 0, false
	}
	for _, i := range r.Cands {
		r.isCand[i] = false
	}
	r.Snap, r.Req, r.Prepared = nil, Request{}, nil
	r.State, r.Note = 0, ""
}

// RunsIt says whether node i runs the request's instance already (Request.RunsOn).
func (r *Round) RunsIt(i int) bool { return i == r.runsOn }

// Pending is node i's count of reserved instances in this round.
func (r *Round) Pending(i int) float64 { return r.pend[i] }

// PendingCores is the cores node i's reserved instances are expected to cost there. It
// reads them when asked, rather than with the counts for every node when the round
// starts: only the utilisation plugin asks, for its candidates with pending ones.
func (r *Round) PendingCores(i int) float64 {
	if r.pend[i] == 0 {
		return 0
	}
	return r.Req.Reserved.Cores(i)
}

// Passes reports whether node i passes the common filters of the round (not excluded,
// not stale, a wave, under every threshold), whatever the plugin's own filters say.
func (r *Round) Passes(i int) bool {
	s := r.Snap
	return !r.excluded[i] && s.lastSeen[i] != 0 && r.staleNs <= s.staleAt[i] && !s.blocked(i)
}

// staleNs is the time staleness is judged at, in Unix nanoseconds: StaleAt when set and
// before Now, else Now.
func (req *Request) staleNs() int64 {
	if !req.StaleAt.IsZero() && req.StaleAt.Before(req.Now) {
		return req.StaleAt.UnixNano()
	}
	return req.Now.UnixNano()
}

// Explaining reports whether the reasons a NodeFilter gives will be shown (an explain
// "all" answer, or the error of a round without candidates): a filter may give a
// short constant reason otherwise, and spare the formatting.
func (r *Round) Explaining() bool { return r.explain }

// pass makes node i a candidate.
func (r *Round) pass(i int, anyMask *uint8, oldest *int) {
	s := r.Snap
	if r.pend[i] != 0 {
		r.pendCands = append(r.pendCands, len(r.Cands))
	}
	r.Cands = append(r.Cands, i)
	r.isCand[i] = true
	*anyMask |= s.reports[i]
	if *oldest < 0 || s.lastSeen[i] < s.lastSeen[*oldest] {
		*oldest = i
	}
}

// Why a node was filtered.
const (
	passed = iota
	byExcluded
	byStale
	byNoWave
	byWaveStopped
	byNoData
	byThreshold
	byPlugin
)

// filters are a plugin's optional filters.
type filters struct {
	reads uint8 // ResourceReader's mask, 0 when the plugin has none
	data  DataFilter
	node  NodeFilter
}

func filtersOf(p Plugin) filters {
	var f filters
	if rr, ok := p.(ResourceReader); ok {
		f.reads = rr.Reads()
	}
	f.data, _ = p.(DataFilter)
	f.node, _ = p.(NodeFilter)
	return f
}

func (r *Round) filter(i int, now int64, pf filters) (int, string) {
	s := r.Snap
	switch {
	case r.excluded[i]:
		return byExcluded, ""
	case s.lastSeen[i] == 0 || now > s.staleAt[i]:
		return byStale, ""
	case s.wave[i] == noWave:
		return byNoWave, ""
	case s.wave[i] == waveStopped:
		return byWaveStopped, ""
	case pf.reads != 0 && s.reports[i]&pf.reads == 0, pf.data != nil && pf.data.NoData(r, i):
		return byNoData, ""
	case s.over[i] != 0:
		return byThreshold, ""
	}
	if pf.node != nil {
		if reason := pf.node.Filter(r, i); reason != "" {
			return byPlugin, reason
		}
	}
	return passed, ""
}

// reason spells out why node i was filtered, for explanations and errors.
func (r *Round) reason(i, why int, pluginReason string, now time.Time) string {
	s := r.Snap
	switch why {
	case byExcluded:
		return "excluded"
	case byStale:
		if s.lastSeen[i] == 0 {
			return "stale: no batch this hour"
		}
		age := now.Sub(time.Unix(0, s.lastSeen[i]))
		return fmt.Sprintf("stale: no batch for %s (limit %g intervals of %s)", age.Round(time.Second), s.filters.StaleIntervals, s.interval[i])
	case byNoWave:
		return ReasonNoWave
	case byWaveStopped:
		return ReasonWaveStopped
	case byNoData:
		return "no data: the node reports none of the levels " + r.algorithm + " reads"
	case byThreshold:
		name := s.thresholds[s.over[i]-1]
		v, _ := s.Views[i].Load(name)
		return fmt.Sprintf("over threshold: %s %.4g > %g", name, v, s.filters.Thresholds[name])
	}
	return pluginReason
}

func (c *FilterCounts) add(why int) {
	switch why {
	case byExcluded:
		c.Excluded++
	case byStale:
		c.Stale++
	case byNoWave:
		c.NoWave++
	case byWaveStopped:
		c.WaveStopped++
	case byNoData:
		c.NoData++
	case byThreshold:
		c.OverThreshold++
	default:
		c.Plugin++
	}
}

// Decide runs the common filters, the plugin's filter and its score over the snapshot's
// nodes and picks the highest score; ties go to the first node by name, so that equal
// clusters give repeatable answers. now is the decision time. It takes no lock and, for
// an answer of the default size, allocates only the explained scores.
func (s *Snapshot) Decide(p Plugin, req Request, now time.Time) (Decision, error) {
	req.Now = now
	r := s.round(req)
	defer r.release()
	prepared, ok := s.prepared[p.Name()]
	if !ok {
		prepared = p.Prepare(s) // a plugin the snapshot was not built for
	}
	r.Prepared = prepared
	r.NextHour = now.UTC().Add(time.Hour).Hour()
	if st, ok := p.(Starter); ok {
		st.Start(r)
	}
	d := Decision{Algorithm: p.Name()}
	pf := filtersOf(p)
	r.algorithm = p.Name()
	staleNs := r.staleNs
	staleAt := time.Unix(0, staleNs)
	var anyMask uint8
	oldest := -1
	if s.likely.fits(pf, staleNs, req.ExplainAll) && !slowFilters {
		oldest, anyMask = r.passLikely(staleNs, pf, &d.FilteredBy)
	} else {
		oldest, anyMask = r.passEach(staleAt, pf, &d)
	}
	if len(r.Cands) == 0 {
		d.Note = r.Note
		return d, r.noCandidates(staleAt, pf)
	}
	r.anyMask, r.allDone = anyMask, false
	d.Candidates = len(r.Cands)
	d.DataAsOf = s.Views[oldest].LastSeen
	r.Scores = resize(r.Scores, len(r.Cands))
	r.final = resize(r.final, len(r.Cands))
	p.Score(r, r.Scores)
	best := r.best(req)
	d.Scores = make([]Score, len(best))
	for j, k := range best {
		i := r.Cands[k]
		parts := p.Explain(r, k)
		parts.round()
		d.Scores[j] = Score{Node: s.Views[i].Node, Value: r.final[k], Parts: parts, Pending: r.pend[i]}
	}
	d.Node = d.Scores[0].Node
	d.Note = r.Note
	return d, nil
}

// better orders candidate positions: higher score first, then node name.
func (r *Round) better(a, b int) int {
	if r.final[a] != r.final[b] {
		return cmp.Compare(r.final[b], r.final[a])
	}
	return strings.Compare(r.Snap.Views[r.Cands[a]].Node, r.Snap.Views[r.Cands[b]].Node)
}

// best returns the positions of the candidates to explain, best first: the top k by
// insertion into a short sorted list, or every candidate sorted.
func (r *Round) best(req Request) []int {
	r.order = r.order[:0]
	if req.ExplainAll {
		for k, v := range r.Scores {
			r.final[k] = round2(clampScore(v))
			r.order = append(r.order, k)
		}
		slices.SortFunc(r.order, r.better)
		return r.order
	}
	k := req.TopK
	if k <= 0 {
		k = DefaultTopK
	}
	k = min(k, MaxTopK)
	// full and last (the k-th best's final score) are kept in locals: this loop visits
	// every candidate, and most leave at the first test.
	final, full, last := r.final, false, 0.0
	for c, v := range r.Scores {
		v = clampScore(v)
		// Rounding moves a score by at most 0.005: one that far below the k-th best
		// cannot enter, and most candidates leave here without being rounded.
		if full && v+0.006 < last {
			continue
		}
		final[c] = round2(v)
		n := len(r.order)
		if full && r.better(c, r.order[n-1]) >= 0 {
			continue
		}
		if n < k {
			r.order = append(r.order, c)
		} else {
			r.order[n-1] = c
		}
		for j := len(r.order) - 1; j > 0 && r.better(r.order[j], r.order[j-1]) < 0; j-- {
			r.order[j], r.order[j-1] = r.order[j-1], r.order[j]
		}
		if len(r.order) == k {
			full, last = true, final[r.order[k-1]]
		}
	}
	return r.order
}

// noCandidates is the error of a round where every node was filtered: the nodes with
// their reasons, grouped by why, the reasons that refused a live node first (the
// algorithm's own filter, a threshold, no data, no wave or a stopped one), then the
// stale and the excluded, at most perGroup named in each (all with ExplainAll), by name. It named the first
// five nodes by name, so that a fleet's stale leftovers hid why its live waves were
// refused behind "and 13 more".
func (r *Round) noCandidates(now time.Time, pf filters) error {
	if len(r.Snap.Views) == 0 {
		return fmt.Errorf("%w: the judge has not heard from any node", ErrNoCandidates)
	}
	r.explain = true // the reasons are shown
	perGroup := 3
	if r.Req.ExplainAll { // asked for every reason: "and 1 more refused by utilisation" hid one
		perGroup = len(r.Snap.Views)
	}
	type filtered struct {
		i      int
		reason string
	}
	var groups [byPlugin + 1][]filtered
	for i := range r.Snap.Views {
		why, pluginReason := r.filter(i, now.UnixNano(), pf)
		if len(groups[why]) < perGroup {
			groups[why] = append(groups[why], filtered{i, r.reason(i, why, pluginReason, now)})
		} else {
			groups[why] = append(groups[why], filtered{i: i})
		}
	}
	var b strings.Builder
	for _, why := range [...]int{byPlugin, byThreshold, byNoData, byWaveStopped, byNoWave, byStale, byExcluded} {
		for k, f := range groups[why] {
			if k == perGroup {
				fmt.Fprintf(&b, "; and %d more %s", len(groups[why])-perGroup, r.groupName(why))
				break
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(r.Snap.Views[f.i].Node + ": " + f.reason)
		}
	}
	return fmt.Errorf("%w: all %d nodes filtered (%s)", ErrNoCandidates, len(r.Snap.Views), b.String())
}

// groupName names the nodes filtered for why, for "and 10 more stale".
func (r *Round) groupName(why int) string {
	switch why {
	case byExcluded:
		return "excluded"
	case byStale:
		return "stale"
	case byNoWave:
		return "without a wave"
	case byWaveStopped:
		return "whose wave stopped"
	case byNoData:
		return "without data"
	case byThreshold:
		return "over a threshold"
	}
	return "refused by " + r.algorithm
}

// Decide builds a snapshot of nodes and decides on it with every candidate explained: the
// one-shot form for tests and tools. The judge keeps a snapshot and calls
// Snapshot.Decide.
func Decide(p Plugin, f Filters, req Request, nodes []*NodeView, now time.Time) (Decision, error) {
	req.ExplainAll = true
	return NewSnapshot(nodes, f, now, p).Decide(p, req, now)
}

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// clampScore bounds a plugin's score to 0–100, NaN to 0.
func clampScore(v float64) float64 {
	switch {
	case v != v || v < 0: // NaN
		return 0
	case v > 100:
		return 100
	}
	return v
}

// passEach runs the filters over every node, one by one: Decide's general path. It
// returns the oldest candidate (-1 when none) and the resources the candidates report.
func (r *Round) passEach(now time.Time, pf filters, d *Decision) (int, uint8) {
	s, nowNs := r.Snap, now.UnixNano()
	var anyMask uint8
	oldest := -1
	for i := range s.Views {
		// The common case inline: a live node with data under its thresholds.
		if !r.excluded[i] && s.lastSeen[i] != 0 && nowNs <= s.staleAt[i] && !s.blocked(i) &&
			(pf.reads == 0 || s.reports[i]&pf.reads != 0) && pf.data == nil && pf.node == nil {
			r.pass(i, &anyMask, &oldest)
			continue
		}
		why, pluginReason := r.filter(i, nowNs, pf)
		if why != passed {
			d.FilteredBy.add(why)
			if r.Req.ExplainAll {
				d.Filtered = append(d.Filtered, Filtered{Node: s.Views[i].Node, Reason: r.reason(i, why, pluginReason, now)})
			}
			continue
		}
		r.pass(i, &anyMask, &oldest)
	}
	return oldest, anyMask
}
