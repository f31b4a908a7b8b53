package alarm

import (
	"encoding/hex"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

type seriesKey struct{ node, metric, labels string }

type series struct {
	node, metric string
	labels       map[string]string
	samples      []policy.Sample // the live window: buf[start:]
	base         int64           // samples dropped from the front so far: samples[0]'s absolute index
	buf          []policy.Sample
	keep         int           // points the conditions need
	window       time.Duration // time the window functions need
	lastSeen     time.Time     // engine clock at the last point (staleness, forgetting idle series, evalTime)
	lastTS       time.Time     // the last point's own time, capped at the engine clock
	interval     time.Duration
	slots        []slot
	gone         bool // forgotten (gc, Release): a layout still pointing here must look it up again
	// warm: Warm gave it points; live: a live point reached it (observe). Unwarm drops
	// the points of a warm series no live point has reached.
	warm, live bool
}

type slot struct {
	p *policy.Policy
	a *alertState
	w *policy.Window // the running state of a time-window condition; nil for the others
	// byFP is the fingerprint of the alert the series makes under a policy with by
	// (policy.Policy.By), once known (byFPSet): a series' labels never change, so it is
	// worked out once, and each point looks the alert up by it.
	byFP    uint64
	byFPSet bool
}

// eval evaluates the slot's condition on s after a new sample; ok is false when the
// series has too few points for the condition to tell (all(#3) after two points).
func (sl *slot) eval(s *series) (value float64, active, ok bool) {
	if sl.w != nil {
		return sl.p.Cond.EvalWindow(sl.w, s.samples, s.base)
	}
	return sl.p.Cond.Eval(s.samples)
}

// alerted reports whether the condition of one of the series' alerts holds (pending or
// firing on its last point).
func (s *series) alerted() bool {
	for i := range s.slots {
		if a := s.slots[i].a; a != nil && a.active {
			return true
		}
	}
	return false
}

// newest is the own time of the series' newest point.
func (s *series) newest() time.Time {
	if len(s.samples) == 0 {
		return time.Time{}
	}
	return s.samples[len(s.samples)-1].TS
}

// evalTime is the series' time at the engine's now, for the timer's evaluations between
// its points: its last point's own time, moved on by the engine time since that point was
// read, never past now. Live, that is now less the point's delivery delay, as its points
// are; while a backlog is read, the timer does not run the series ahead of its points,
// so that `for` and keep_firing_for are not counted on time the points have not told yet.
func (s *series) evalTime(now time.Time) time.Time {
	return minTime(s.lastTS.Add(now.Sub(s.lastSeen)), now)
}

// layoutEntry remembers which series a node's point at one position of its batch was.
// An agent sends the same points in the same order every tick, so the previous batch's
// layout resolves a point with a name and label comparison instead of building its
// label key and looking it up (the costliest part of evaluation with labelled points).
type layoutEntry struct {
	name string
	s    *series // nil: no policy reads this metric
}

// seriesAt returns the series of the node's i-th point, nil when no policy reads its
// metric, and remembers it in the node's layout.
func (sh *shard) seriesAt(node string, layout []layoutEntry, i int, pt *metric.Point) *series {
	if i < len(layout) {
		if le := &layout[i]; le.name == pt.Name {
			if le.s == nil {
				return nil
			}
			if !le.s.gone && labelsEqual(le.s.labels, pt.Labels) {
				return le.s
			}
		}
	}
	var s *series
	if pols := sh.e.byMetric[pt.Name]; len(pols) > 0 {
		s = sh.seriesFor(node, pt, pols)
	}
	if i < len(layout) {
		layout[i] = layoutEntry{name: pt.Name, s: s}
	}
	return s
}

func labelsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (sh *shard) seriesFor(node string, pt *metric.Point, pols []*policy.Policy) *series {
	k := seriesKey{node: node, metric: pt.Name}
	if len(pt.Labels) > 0 {
		k.labels = metric.LabelSetKey(pt.Labels)
	}
	if s, ok := sh.series[k]; ok {
		return s
	}
	s := &series{node: node, metric: pt.Name, labels: maps.Clone(pt.Labels)}
	for _, p := range pols {
		if p.MatchNode(node) && p.MatchLabels(pt.Labels) {
			sl := slot{p: p}
			if p.Cond.Window > 0 {
				sl.w = &policy.Window{}
			}
			s.slots = append(s.slots, sl)
			s.keep = max(s.keep, p.Cond.Need())
			s.window = max(s.window, p.Cond.Window)
		}
	}
	sh.series[k] = s
	return s
}

// add appends a sample and trims the window. The window lives at the end of buf; once
// buf is full the live samples move back to its start, so a steady series does not
// allocate.
func (s *series) add(x policy.Sample) {
	if len(s.buf) == cap(s.buf) && len(s.samples) < len(s.buf) {
		s.buf = append(s.buf[:0], s.samples...)
	}
	s.buf = append(s.buf, x)
	s.samples = s.buf[len(s.buf)-len(s.samples)-1:]
	s.trim()
}

// trim keeps what the conditions need: the last keep points, and the points within the
// window before the newest; never more than a hard bound.
func (s *series) trim() {
	const hardMax = 100_000
	n := len(s.samples)
	drop := 0
	newest := s.samples[n-1].TS
	for drop < n-1 && n-drop > s.keep {
		if s.window > 0 && s.samples[drop].TS.After(newest.Add(-s.window)) {
			break
		}
		drop++
	}
	if n-drop > hardMax {
		drop = n - hardMax
	}
	s.samples = s.samples[drop:]
	s.base += int64(drop)
}

// alertLabels are the labels of an alert: the reserved ones, the policy's, and the
// point's (a point label that collides with a reserved one is kept as exported_<name>).
func alertLabels(p *policy.Policy, node string, point map[string]string) map[string]string {
	l := make(map[string]string, 4+len(p.AlertLabels)+len(point))
	for k, v := range point {
		if p.By == nil || slices.Contains(p.By, k) {
			l[k] = v
		}
	}
	for k, v := range p.AlertLabels {
		l[k] = v
	}
	for _, k := range []string{policy.LabelAlertName, policy.LabelNode, policy.LabelSeverity, policy.LabelMetric} {
		if v, ok := point[k]; ok && (p.By == nil || slices.Contains(p.By, k)) {
			l["exported_"+k] = v
		}
	}
	l[policy.LabelAlertName] = p.Name
	l[policy.LabelNode] = node
	l[policy.LabelSeverity] = p.Severity.String()
	if p.Metric != "" {
		l[policy.LabelMetric] = p.Metric
	}
	return l
}

func nodataLabels(p *policy.Policy, node string) map[string]string {
	l := alertLabels(p, node, nil)
	l["reason"] = "nodata"
	return l
}

// fingerprintText is the text an alert's fingerprint hashes: its label pairs sorted,
// with separators no label can hold. It is not metric.LabelSetKey because fingerprints
// outlive a process (the notification log, receivers): the text must never change.
func fingerprintText(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0xff)
		b.WriteString(l[k])
		b.WriteByte(0xfe)
	}
	return b.String()
}

// fingerprint identifies an alert by its labels (FNV-64a over the sorted pairs).
func fingerprint(l map[string]string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(fingerprintText(l)))
	return h.Sum64()
}

// parseFP and fpString convert a fingerprint to and from the 16 hex digits the
// notification log and the API show.
func parseFP(s string) (uint64, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	var fp uint64
	for _, c := range b {
		fp = fp<<8 | uint64(c)
	}
	return fp, true
}

func fpString(fp uint64) string {
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = byte(fp)
		fp >>= 8
	}
	return hex.EncodeToString(b[:])
}
