package alarm

import (
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestAlarmPausedIntegration: a `binlake alarm` process on the real Kafka is paused
// (SIGSTOP, as a VM's stolen time or a stop signal does) for twice the nodata window
// while its nodes keep publishing, then resumed. Its clock jumped while its consumer
// stood still: it must not page nodata for nodes whose points wait to be read, and it
// says in its log that it was paused. Violations page once and resolve once throughout.
func TestAlarmPausedIntegration(t *testing.T) {
	r := newProcessRig(t, "alarmpause", 3*time.Minute)
	ctx, rcv := r.ctx, r.rcv
	proc := startAlarmProc(t, "alarm-paused", r.cfg, shardPolicies)
	waitMembers(t, ctx, r.kc, r.group, 1)
	nodes, violating := shardNodes(8, 4, 2)
	agents := startFleet(t, ctx, r.pub, r.topic, nodes, violating)
	rcv.waitPages(t, "first pages", func(pg pages) bool { return len(pg.firing) == len(violating) })
	watch(2 * time.Second)

	proc.Signal(t, syscall.SIGSTOP)
	watch(2 * nodataAfter) // the nodes publish on; nothing reads them
	proc.Signal(t, syscall.SIGCONT)
	proc.WaitOutput(t, regexp.MustCompile(`timer ran late`), 30*time.Second)
	watch(2 * nodataAfter)

	agents.heal()
	rcv.waitPages(t, "resolutions", func(pg pages) bool { return len(pg.resolved) == len(violating) })
	watch(2 * time.Second)
	pg := rcv.pages() // as the observation ends: silent agents would page nodata (3 intervals on)
	agents.stop()
	if err := proc.Exited(); err != nil {
		t.Fatalf("the alarm ended: %v", err)
	}
	requirePagedOnce(t, pg, violating, agents)
}
