package alarm

import (
	"context"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// DrainingGroup is the coordinator group in which a stopping alarm process stands while
// it delivers what it claimed (alarm/draining/<process>). Its claims' process leaves the
// consumer group first, so that its partitions move at once; without this mark the
// process taking them over saw the claimer gone (claimerGone) and paged again what was
// still being delivered: a page twice at every graceful stop beside a slow or retrying
// channel. The mark ends with the drain (or the process's session, after a kill).
const DrainingGroup = "alarm/draining"

// drainMarkWait bounds the mark's write: a coordinator that does not answer must not
// hold the stop; the process then leaves without it (its claims are taken over then).
const drainMarkWait = 2 * time.Second

// announceDraining stands this process in DrainingGroup under the name its claims carry,
// until the returned function is called (after the drain). Without a consumer group (one
// process) claims carry no name and there is nothing to announce.
func (a *Alarm) announceDraining() (done func()) {
	name := a.eng.claimer()
	if name == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	registered := make(chan error, 1)
	go func() { registered <- a.o.Coordinator.Register(ctx, DrainingGroup, coord.Member{ID: name}) }()
	select {
	case err := <-registered:
		if err != nil {
			a.log.Warn("could not mark this process as delivering its claims; the process taking its partitions over may page them again", "err", err)
		} else {
			a.log.Info("delivering this process's claims before it leaves; the next owners of its partitions wait for them", "mark", DrainingGroup+"/"+name)
		}
	case <-time.After(drainMarkWait):
		a.log.Warn("the coordinator did not answer the draining mark in time; the process taking the partitions over may page this one's claims again")
	}
	return cancel
}

// drainingClaimers is the processes standing in DrainingGroup: their claims are being
// delivered, though the consumer group no longer lists them.
func drainingClaimers(ctx context.Context, c coord.Coordinator) ([]string, error) {
	ms, err := c.Members(ctx, DrainingGroup)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.ID
	}
	return names, nil
}

// withDraining is the group's processes and those draining, sorted, each once.
func withDraining(live, draining []string) []string {
	all := append(slices.Clone(live), draining...)
	slices.Sort(all)
	return slices.Compact(all)
}
