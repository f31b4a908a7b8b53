package alarm

// Every page once, every resolve delivered, through the ways a fleet of `binlake alarm`
// processes changes hands (issue 34): three processes in one consumer group on the real
// Kafka and ZooKeeper go through a rolling restart, a kill -9, a fourth process joining
// and leaving, and a stop right after a heal, while their nodes violate, heal, stay
// healthy and go silent around those moments. What the webhook receiver got is judged
// at the end (rolling_verdict_test.go).

import (
	"syscall"
	"testing"
	"time"
)

// rollingPolicies page a node whose cpu is above 90 on its last two points (a condition
// of more than one point: a process that takes a node over starts without its history),
// once an hour, with a group_wait long enough for a stop to fall within it; and a node
// silent for 3 of its 1 s intervals.
const rollingPolicies = `policies:
  - name: cpu
    metric: cpu.util
    condition: all(#2) > 90
    severity: P2
    channels: [c]
    repeat_interval: 1h
    group_wait: 1s
` + nodataPolicy

// rollingGroupWait is the cpu policy's group_wait above.
const rollingGroupWait = time.Second

// maxTimeToPage bounds how long a violation that starts while the group is stable may
// take to page: two points of 1 s, the group_wait, the delivery.
const maxTimeToPage = 15 * time.Second

// TestAlarmRollingRestartIntegration (issue 34): three `binlake alarm` processes share a
// consumer group and the notification log in ZooKeeper; 60 agents publish every second,
// nodes on every partition violate (so every process owns some), others stay healthy or
// go silent. In turn: a rolling restart (SIGTERM, one at a time, the group stable in
// between), a kill -9 and restart, a fourth process joining then leaving, and a heal
// followed within group_wait by the SIGTERM of the healed node's owner; nodes go silent
// 2 s before a restart of their owner and before their partition moves. At the end every
// violating node paged exactly once (repeat_interval 1h) and was resolved exactly once,
// never before its violation ended, every silent node paged nodata exactly once, and
// nothing else reached the receiver.
func TestAlarmRollingRestartIntegration(t *testing.T) {
	s := newRollingRun(t)
	early := s.takeAll(2, "violating from the start")
	s.f = startFleet(t, s.r.ctx, s.r.pub, s.r.topic, s.nodes, early)
	s.event("fleet started: %d nodes, violating %v", len(s.nodes), early)
	s.waitPaged("the first pages", early)
	s.settle("the first owners")

	steady := s.take(0, "silent in steady state")
	s.f.silence(steady)
	s.event("silenced %s in steady state", steady)
	s.waitNodata("the steady silent node's nodata page", steady)

	// 1. A rolling restart.
	for i := range s.procs {
		s.silenceOwnedBy(i, "silent 2s before SIGTERM of its owner "+s.procs[i].Name+" (rolling restart)")
		s.stop(i, syscall.SIGTERM)
		s.waitMembers(2)
		s.procs[i] = s.start(s.procs[i].Name + "r")
		s.settle("after the restart of " + s.procs[i].Name)
	}

	// 2. A kill -9 and restart.
	s.silenceOwnedBy(1, "silent 2s before kill -9 of its owner "+s.procs[1].Name)
	s.stop(1, syscall.SIGKILL)
	s.waitMembers(2)
	s.procs[1] = s.start(s.procs[1].Name + "k")
	s.settle("after the kill -9")

	// New violations while the group is stable: how long a page takes, outside any
	// takeover.
	late := s.takeAll(1, "violating from the middle")
	s.f.violate(late...)
	s.event("violating from now: %v", late)
	s.waitPaged("the late violations' pages", late)

	// 3. A fourth process joins, then leaves.
	s.joinAndLeave()

	// 4. A heal, then within group_wait the SIGTERM of the healed node's owner.
	s.healThenStopOwner(early[0])

	s.f.heal()
	s.event("healed every node")
	violators := append(append([]string{}, early...), late...)
	s.rcv().waitFor(30*time.Second, func(as []arrival) bool {
		return len(tallyArrivals(as).resolvedNodes("cpu")) >= len(violators)
	})
	watch(5 * time.Second) // late duplicates, false nodata
	// Judged before the fleet stops: its silence would page nodata for every node.
	got := s.rcv().arrivals()
	s.f.stop()
	s.event("fleet stopped")
	for _, p := range s.procs {
		if err := p.Exited(); err != nil {
			t.Errorf("alarm process %s died: %v", p.Name, err)
		}
	}
	s.verdict(got, violators)
}
