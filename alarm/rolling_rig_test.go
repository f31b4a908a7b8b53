package alarm

// The rig of TestAlarmRollingRestartIntegration: its processes, its nodes' roles, the
// steps of its scenario (restarts, joins, a stop after a heal) and their timeline.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rollingRun is the state of one TestAlarmRollingRestartIntegration.
type rollingRun struct {
	t  *testing.T
	r  *processRig
	f  *fleet
	t0 time.Time

	nodes []string
	pool  map[int][]string  // nodes per partition not given a role yet
	roles map[string]string // node → what the scenario does with it
	procs []*alarmProc      // the group's members, by slot
	all   []*alarmProc      // every process started, for the logs
	log   []string          // the scenario's events, for the timeline
}

func newRollingRun(t *testing.T) *rollingRun {
	r := newProcessRigOn(t, "alarmroll", 5*time.Minute, rollingPartitions)
	s := &rollingRun{t: t, r: r, t0: time.Now(), pool: map[int][]string{}, roles: map[string]string{}}
	for i := range 60 {
		n := fmt.Sprintf("wave-%02d", i)
		s.nodes = append(s.nodes, n)
		p := partitionOf(n, rollingPartitions)
		s.pool[p] = append(s.pool[p], n)
	}
	for _, name := range []string{"alarm-a", "alarm-b", "alarm-c"} {
		s.procs = append(s.procs, s.start(name))
	}
	s.waitMembers(3)
	t.Cleanup(func() {
		s.timeline()
		if t.Failed() {
			s.processLogs()
		}
	})
	return s
}

func (s *rollingRun) rcv() *receiver { return s.r.rcv }

// since is at relative to the scenario's start, as the timeline shows it.
func (s *rollingRun) since(at time.Time) string {
	return fmt.Sprintf("t+%5.1fs", at.Sub(s.t0).Seconds())
}

// event records and logs one step of the scenario.
func (s *rollingRun) event(format string, args ...any) {
	line := s.since(time.Now()) + " " + fmt.Sprintf(format, args...)
	s.log = append(s.log, line)
	s.t.Log(line)
}

// take gives the next unused node of partition p a role.
func (s *rollingRun) take(p int, role string) string {
	s.t.Helper()
	if len(s.pool[p]) == 0 {
		s.t.Fatalf("no node left on partition %d for %q: add nodes", p, role)
	}
	n := s.pool[p][0]
	s.pool[p] = s.pool[p][1:]
	s.roles[n] = role
	return n
}

// takeAll takes n nodes of every partition.
func (s *rollingRun) takeAll(n int, role string) []string {
	var out []string
	for p := range rollingPartitions {
		for range n {
			out = append(out, s.take(p, role))
		}
	}
	return out
}

// start starts a process named name; its external_url names it, so each notification
// says which process sent it.
func (s *rollingRun) start(name string) *alarmProc {
	s.t.Helper()
	listen := `http: {listen: "127.0.0.1:0"}`
	require.Contains(s.t, s.r.cfg, listen)
	cfg := strings.Replace(s.r.cfg, listen, fmt.Sprintf(`http: {listen: "127.0.0.1:0", external_url: "http://%s"}`, name), 1)
	p := startAlarmProc(s.t, name, cfg, rollingPolicies)
	s.all = append(s.all, p)
	s.event("started %s (%s)", name, p.api)
	return p
}

// stop sends sig to the process in slot i and waits for it to end; it returns when the
// signal was sent.
func (s *rollingRun) stop(i int, sig syscall.Signal) time.Time {
	s.t.Helper()
	p := s.procs[i]
	sent := time.Now()
	p.Signal(s.t, sig)
	s.event("%v to %s", sig, p.Name)
	err := p.Wait(s.t, 30*time.Second)
	s.event("%s ended: %v", p.Name, err)
	if sig == syscall.SIGTERM && err != nil {
		s.t.Errorf("%s did not stop cleanly on SIGTERM: %v", p.Name, err)
	}
	return sent
}

func (s *rollingRun) waitMembers(n int) {
	s.t.Helper()
	waitMembers(s.t, s.r.ctx, s.r.kc, s.r.group, n)
	s.event("group stable with %d members", n)
}

// alerts is what GET /v1/alerts of a process shows: its alerts pending, firing and
// resolved (the alerts of a node whose partition moved away are released).
func (s *rollingRun) alerts(p *alarmProc) ([]AlertView, error) {
	resp, err := http.Get(p.api + "/v1/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct{ Alerts []AlertView }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("%s: GET /v1/alerts: %w", p.Name, err)
	}
	return body.Alerts, nil
}

// evaluates lists the nodes a process evaluates, with their alerts ("policy:state").
func (s *rollingRun) evaluates(p *alarmProc) (map[string][]string, error) {
	as, err := s.alerts(p)
	out := map[string][]string{}
	for _, a := range as {
		n := a.Labels["node"]
		out[n] = append(out[n], a.Labels["alertname"]+":"+a.State)
	}
	return out, err
}

// settle waits until the group is stable with every member and each node violating now
// is evaluated by exactly one process, the same one for 2 s: the takeover is over. (A
// process that lost a partition lists its nodes until its next position poll, 1 s, and
// the one that gained it lists them from their next batch on.)
func (s *rollingRun) settle(what string) {
	s.t.Helper()
	s.waitMembers(len(s.procs))
	var last string
	var since time.Time
	require.EventuallyWithTf(s.t, func(c *assert.CollectT) {
		owners := map[string][]string{}
		for _, p := range s.procs {
			ev, err := s.evaluates(p)
			require.NoError(c, err)
			for n := range ev {
				owners[n] = append(owners[n], p.Name)
			}
		}
		var state []string
		ok := true
		for _, n := range s.nodes {
			if st := s.f.record(n); st.violating && !st.silent {
				state = append(state, fmt.Sprintf("%s on %v", n, owners[n]))
				ok = ok && len(owners[n]) == 1
			}
		}
		now := strings.Join(state, ", ")
		if !ok || now != last {
			last, since = now, time.Now()
			c.Errorf("last: %s", now)
			return
		}
		assert.GreaterOrEqual(c, time.Since(since), 2*time.Second, "last: %s", now)
	}, waitLimit, waitTick, "%s: every violating node evaluated by exactly one process for 2s", what)
	s.event("%s: settled", what)
}

// partitions lists the partitions whose violating nodes the process in slot i evaluates.
func (s *rollingRun) partitions(i int) []int {
	s.t.Helper()
	ev, err := s.evaluates(s.procs[i])
	require.NoError(s.t, err)
	var out []int
	for n := range ev {
		if st := s.f.record(n); st.violating {
			if p := partitionOf(n, rollingPartitions); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// silenceOwnedBy silences a node on each partition the process in slot i owns and lets
// 2 s pass from their last batch.
func (s *rollingRun) silenceOwnedBy(i int, role string) {
	s.t.Helper()
	parts := s.partitions(i)
	require.NotEmpty(s.t, parts, "%s evaluates violating nodes (every partition has some)", s.procs[i].Name)
	var silent []string
	for _, p := range parts {
		silent = append(silent, s.take(p, role))
	}
	s.silenceFor(silent, 2*time.Second)
	s.event("silenced %v (partitions %v of %s) 2s ago", silent, parts, s.procs[i].Name)
}

// silenceFor silences nodes and waits until d passed since their last batch.
func (s *rollingRun) silenceFor(nodes []string, d time.Duration) {
	s.f.silence(nodes...)
	var last time.Time
	for _, n := range nodes {
		if l := s.f.record(n).last; l.After(last) {
			last = l
		}
	}
	time.Sleep(time.Until(last.Add(d)))
}

// assignment is which member (by client id) holds each partition.
func (s *rollingRun) assignment() map[int]string {
	s.t.Helper()
	gr, err := s.r.kc.DescribeGroups(s.r.ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{s.r.group}})
	require.NoError(s.t, err)
	require.Len(s.t, gr.Groups, 1)
	out := map[int]string{}
	for _, m := range gr.Groups[0].Members {
		for _, tp := range m.MemberAssignments.Topics {
			for _, p := range tp.Partitions {
				out[p] = m.ClientID
			}
		}
	}
	return out
}

// moved lists the partitions whose member changed from before to after.
func moved(before, after map[int]string) []int {
	var out []int
	for p := range rollingPartitions {
		if before[p] != after[p] {
			out = append(out, p)
		}
	}
	return out
}

// rollingPartitions is the partition count of the test's topic: six, so that a fourth
// member always takes partitions from the others (with three partitions the range
// assignor leaves one of four members idle, and a join whose member sorted last moved
// nothing).
const rollingPartitions = 6

// joinAndLeave starts a fourth process, a node on every partition silent before, and
// stops it once the group is stable. A join that moved nothing (it should not happen
// with rollingPartitions) is undone and tried again with a new process.
func (s *rollingRun) joinAndLeave() {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		before := s.assignment()
		var silent []string
		for p := range rollingPartitions {
			silent = append(silent, s.take(p, "silent before the fourth process joined"))
		}
		s.silenceFor(silent, time.Second) // the join takes about a second to reach the group
		s.event("silenced %v", silent)
		s.procs = append(s.procs, s.start(fmt.Sprintf("alarm-d%d", attempt)))
		s.waitMembers(4)
		joined := moved(before, s.assignment())
		for _, n := range silent {
			gap := time.Since(s.f.record(n).last).Round(100 * time.Millisecond)
			if p := partitionOf(n, rollingPartitions); slices.Contains(joined, p) {
				s.roles[n] = fmt.Sprintf("silent %v before its partition moved to a joining process", gap)
			} else {
				s.roles[n] = "silent in steady state (the join did not move its partition)"
			}
		}
		s.event("the join moved partitions %v", joined)
		s.settle("after the join")
		watch(3 * time.Second) // the moved nodes' nodata is due
		before = s.assignment()
		s.stop(3, syscall.SIGTERM)
		s.procs = s.procs[:3]
		s.waitMembers(3)
		s.event("the leave moved partitions %v", moved(before, s.assignment()))
		s.settle("after the leave")
		if len(joined) > 0 {
			return
		}
		if attempt == 3 {
			s.t.Fatal("three joins moved no partition: the scenario needs a move")
		}
	}
}

// healThenStopOwner heals node and, as soon as its owner decided the resolution, stops
// that owner with SIGTERM: the resolution waits in its group for group_wait then.
func (s *rollingRun) healThenStopOwner(node string) {
	s.t.Helper()
	owner := -1
	for i, p := range s.procs {
		ev, err := s.evaluates(p)
		require.NoError(s.t, err)
		if len(ev[node]) > 0 {
			require.Equal(s.t, -1, owner, "%s is evaluated by one process", node)
			owner = i
		}
	}
	require.NotEqual(s.t, -1, owner, "a process evaluates %s", node)
	as, err := s.alerts(s.procs[owner])
	require.NoError(s.t, err)
	fp := ""
	for _, a := range as {
		if a.Labels["node"] == node && a.Labels["alertname"] == "cpu" {
			fp = a.Fingerprint
		}
	}
	require.NotEmpty(s.t, fp, "%s's cpu alert on %s", node, s.procs[owner].Name)
	s.roles[node] += "; healed, then its owner stopped within group_wait"
	s.f.heal(node)
	s.event("healed %s, owned by %s", node, s.procs[owner].Name)
	// Polled faster than poll does: the stop must fall within group_wait.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ev, err := s.evaluates(s.procs[owner])
		require.NoError(s.t, err)
		if slices.Contains(ev[node], "cpu:resolved") {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s not resolved on its owner %s within 30s: %v", node, s.procs[owner].Name, ev[node])
		}
		time.Sleep(20 * time.Millisecond)
	}
	decided := time.Now()
	if gap := s.stop(owner, syscall.SIGTERM).Sub(decided); gap >= rollingGroupWait {
		s.t.Errorf("harness: the stop came %v after the resolution was seen, not within group_wait %v", gap, rollingGroupWait)
	}
	s.event("%s's resolution seen on %s at %s, %v after its first healthy batch", node, s.procs[owner].Name,
		s.since(decided), decided.Sub(s.f.record(node).healedAt).Round(10*time.Millisecond))
	// What the next owner can learn from the shared log (a diagnostic for the timeline:
	// the verdict judges only what the receiver got).
	if le, _, err := (&CoordLog{C: s.r.zc}).Get(s.r.ctx, fp); err != nil {
		s.event("after the stop, the notification log has no entry for %s: %v", node, err)
	} else {
		s.event("after the stop, the notification log holds %s: queued %s, last sent %s, sent %d", node, s.since(le.QueuedAt), s.since(le.LastSent), le.Sent)
	}
	s.waitMembers(2)
	s.procs[owner] = s.start(s.procs[owner].Name + "h")
	s.settle("after the stop following the heal")
}

// waitPaged waits (30 s at most, without failing: the verdict judges) until every node
// has a firing cpu page.
func (s *rollingRun) waitPaged(what string, nodes []string) {
	ok := s.rcv().waitFor(30*time.Second, func(as []arrival) bool {
		paged := tallyArrivals(as).firingNodes("cpu")
		for _, n := range nodes {
			if !paged[n] {
				return false
			}
		}
		return true
	})
	s.event("%s: all arrived: %v", what, ok)
}

// waitNodata waits (30 s at most, without failing) for node's nodata page.
func (s *rollingRun) waitNodata(what, node string) {
	ok := s.rcv().waitFor(30*time.Second, func(as []arrival) bool {
		return tallyArrivals(as).firingNodes("nodata")[node]
	})
	s.event("%s: arrived: %v", what, ok)
}

// waitFor waits up to d until ok accepts what the receiver got, and says whether it did.
func (r *receiver) waitFor(d time.Duration, ok func([]arrival) bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !ok(r.arrivals()) {
		select {
		case <-r.seen:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
