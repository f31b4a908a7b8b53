package alarm

// The verdict of TestAlarmRollingRestartIntegration: what the webhook receiver got,
// alert by alert with its arrival time, held against what the fleet's nodes did.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/alarm/notify"
)

// arrival is one alert of a webhook payload, when the payload arrived and the
// external URL of the process that sent it.
type arrival struct {
	at   time.Time
	a    notify.WebhookAlert
	from string
}

// kind is "nodata" for a nodata alert, else the alert's policy.
func (a arrival) kind() string {
	if a.a.Labels["reason"] == "nodata" {
		return "nodata"
	}
	return a.a.Labels["alertname"]
}

func (r *receiver) arrivals() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []arrival
	for i, p := range r.got {
		for _, a := range p.Alerts {
			out = append(out, arrival{at: r.at[i], a: a, from: p.ExternalURL})
		}
	}
	return out
}

// tally is the arrival times per node, kind ("cpu", "nodata") and status.
type tally map[string]map[string]map[string][]time.Time

func tallyArrivals(as []arrival) tally {
	t := tally{}
	for _, a := range as {
		n := a.a.Labels["node"]
		if t[n] == nil {
			t[n] = map[string]map[string][]time.Time{}
		}
		if t[n][a.kind()] == nil {
			t[n][a.kind()] = map[string][]time.Time{}
		}
		t[n][a.kind()][a.a.Status] = append(t[n][a.kind()][a.a.Status], a.at)
	}
	return t
}

func (t tally) get(node, kind, status string) []time.Time { return t[node][kind][status] }

func (t tally) nodesWith(kind, status string) map[string]bool {
	out := map[string]bool{}
	for n := range t {
		if len(t.get(n, kind, status)) > 0 {
			out[n] = true
		}
	}
	return out
}

func (t tally) firingNodes(kind string) map[string]bool {
	return t.nodesWith(kind, notify.StatusFiring)
}

func (t tally) resolvedNodes(kind string) map[string]bool {
	return t.nodesWith(kind, notify.StatusResolved)
}

// verdict checks everything the receiver got: every violating node paged once, within
// maxTimeToPage (every violation started while the group was stable), and resolved
// once, after its violation ended; every silent node paged nodata once, not before it
// was silent for 3 intervals, and nothing else; nothing at all for the other nodes.
func (s *rollingRun) verdict(as []arrival, violators []string) {
	t := s.t
	got := tallyArrivals(as)
	times := func(ts []time.Time) string {
		var out []string
		for _, at := range ts {
			out = append(out, s.since(at))
		}
		return "[" + strings.Join(out, " ") + "]"
	}
	fail := func(node, format string, args ...any) {
		t.Errorf("%s (partition %d, %s): %s", node, partitionOf(node, rollingPartitions), s.roles[node], fmt.Sprintf(format, args...))
	}
	var figures []string
	// The test's agents publishing nothing for nodataAfter (a stall of this process on a
	// loaded machine) make every node silent on the topic: nodata for live nodes is then
	// right, and only reported.
	stall := s.f.longestStall()
	liveNodata := func(n string, ndF, ndR []time.Time) {
		if stall >= nodataAfter {
			t.Logf("%s: nodata notices %s %s after the agents' publishing stalled for %s", n, times(ndF), times(ndR), stall.Round(10*time.Millisecond))
			return
		}
		fail(n, "nodata notices %s %s for a live node (the agents' longest silence on the topic %s)", times(ndF), times(ndR), stall.Round(10*time.Millisecond))
	}
	for _, n := range s.nodes {
		st := s.f.record(n)
		cpuF, cpuR := got.get(n, "cpu", notify.StatusFiring), got.get(n, "cpu", notify.StatusResolved)
		ndF, ndR := got.get(n, "nodata", notify.StatusFiring), got.get(n, "nodata", notify.StatusResolved)
		switch {
		case slices.Contains(violators, n):
			if len(cpuF) != 1 {
				fail(n, "%d cpu pages %s, want 1 (violating from %s)", len(cpuF), times(cpuF), s.since(st.violatedAt))
			}
			if len(cpuR) != 1 {
				fail(n, "%d cpu resolutions %s, want 1 (healed at %s)", len(cpuR), times(cpuR), s.since(st.healedAt))
			}
			for _, at := range cpuR {
				if st.healedAt.IsZero() || !at.After(st.healedAt) {
					fail(n, "resolved at %s while it still violated (healed at %s)", s.since(at), s.since(st.healedAt))
				}
			}
			if len(ndF)+len(ndR) > 0 {
				liveNodata(n, ndF, ndR)
			}
			if len(cpuF) > 0 {
				toPage := cpuF[0].Sub(st.violatedAt)
				figures = append(figures, fmt.Sprintf("%s: paged %.1fs after its violation started", n, toPage.Seconds()))
				if toPage < 0 || toPage > maxTimeToPage {
					fail(n, "paged %v after its violation started, want within 0..%v", toPage.Round(100*time.Millisecond), maxTimeToPage)
				}
			}
			if i := slices.IndexFunc(cpuR, st.healedAt.Before); i >= 0 && !st.healedAt.IsZero() {
				figures = append(figures, fmt.Sprintf("%s: resolved %.1fs after its heal", n, cpuR[i].Sub(st.healedAt).Seconds()))
			}
		case st.silent:
			if len(ndF) != 1 {
				fail(n, "%d nodata pages %s, want 1 (last batch at %s)", len(ndF), times(ndF), s.since(st.last))
			}
			for _, at := range ndF {
				if at.Before(st.last.Add(3 * time.Second)) {
					fail(n, "nodata page at %s, before 3 intervals of silence (last batch at %s)", s.since(at), s.since(st.last))
				}
			}
			if len(ndR)+len(cpuF)+len(cpuR) > 0 {
				fail(n, "nodata resolved %s, cpu pages %s and resolutions %s for a silent healthy node", times(ndR), times(cpuF), times(cpuR))
			}
			if len(ndF) > 0 {
				figures = append(figures, fmt.Sprintf("%s: nodata page %.1fs after its last batch", n, ndF[0].Sub(st.last).Seconds()))
			}
		default:
			if len(cpuF)+len(cpuR) > 0 {
				fail(n, "a healthy node got cpu pages %s, resolutions %s", times(cpuF), times(cpuR))
			}
			if len(ndF)+len(ndR) > 0 {
				liveNodata(n, ndF, ndR)
			}
		}
	}
	for n := range got {
		if !slices.Contains(s.nodes, n) {
			t.Errorf("notices for %q, which is no node of the fleet: %v", n, got[n])
		}
	}
	t.Logf("figures:\n  %s", strings.Join(figures, "\n  "))
}

// timeline logs the scenario's events and every alert the receiver got, in time order,
// and the counts per node.
func (s *rollingRun) timeline() {
	lines := append([]string{}, s.log...)
	for _, a := range s.rcv().arrivals() {
		lines = append(lines, fmt.Sprintf("%s   <- %s %s %s from %s", s.since(a.at), a.a.Status, a.kind(), a.a.Labels["node"], strings.TrimPrefix(a.from, "http://")))
	}
	slices.SortStableFunc(lines, func(a, b string) int { return strings.Compare(a[:8], b[:8]) })
	got := tallyArrivals(s.rcv().arrivals())
	var counts []string
	for _, n := range s.nodes {
		var c []string
		for _, kind := range []string{"cpu", "nodata"} {
			for _, st := range []string{notify.StatusFiring, notify.StatusResolved} {
				if k := len(got.get(n, kind, st)); k > 0 {
					c = append(c, fmt.Sprintf("%s %s ×%d", kind, st, k))
				}
			}
		}
		if role := s.roles[n]; role != "" || len(c) > 0 {
			counts = append(counts, fmt.Sprintf("%s (p%d, %s): %s", n, partitionOf(n, rollingPartitions), role, strings.Join(c, ", ")))
		}
	}
	s.t.Logf("timeline:\n  %s\nnotices per node:\n  %s", strings.Join(lines, "\n  "), strings.Join(counts, "\n  "))
}

// processLogs logs what the alarm processes said about ownership, the notification log
// and their stops (testenv logs only each one's last lines).
func (s *rollingRun) processLogs() {
	for _, p := range s.all {
		var keep []string
		for _, l := range strings.Split(p.Output(), "\n") {
			if strings.Contains(l, "component=alarm") || strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
				keep = append(keep, l)
			}
		}
		s.t.Logf("%s's log (alarm lines, warnings):\n%s", p.Name, strings.Join(keep, "\n"))
	}
}
