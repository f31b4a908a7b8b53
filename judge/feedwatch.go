package judge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// The metric feed's own outage. A judge fed through Kafka whose broker stops answering
// receives no batch from any node, and by the rule of staleness (each node's last batch
// against now) every node went stale after three of its intervals: an outside trial's
// judge refused every placement ("all 2 nodes filtered … stale") through a broker blip,
// while its waves ran on. The bus tells the judge whether it still reads the stream
// (bus.Positioner: the group's membership, and whether it is caught up). When that
// question has gone unanswered for feedStallAfter, the feed is stalled: placements judge
// staleness as of the last answer, so that the nodes live then stay live, until an
// answer says the subscription caught up with what the outage held back (or a minute
// after the bus answers again, caught up or not). A stream that flows with some nodes
// silent is no stall: those nodes go stale as before.

const (
	// feedPoll is how often the bus is asked, each question bounded by as long.
	feedPoll = time.Second
	// feedStallAfter is how long without an answer makes a stall: a few questions, as
	// one can fail on a busy broker, and a group's rebalance answers "not known" for a
	// moment.
	feedStallAfter = 3 * time.Second
	// feedCatchUpMax bounds the hold once the bus answers again: a subscription that
	// never reports itself caught up (a stream faster than its commits) must not keep
	// dead nodes live for good.
	feedCatchUpMax = time.Minute
)

// feedWatch is the feed's state, as the last answers left it.
type feedWatch struct {
	mu     sync.Mutex // the answers' side: lastOK, back and the changes of stalledNs
	lastOK time.Time  // the last answer with the membership known
	back   time.Time  // while stalled, the first answer with the membership known
	// stalledNs is, in Unix nanoseconds, the time staleness is judged as of while the
	// feed is stalled (0: it is not), read without the lock: every node's liveness asks.
	stalledNs atomic.Int64
}

// watchFeed asks pos every feedPoll until ctx ends.
func (j *Judge) watchFeed(ctx context.Context, pos bus.Positioner) {
	j.feed.mu.Lock()
	j.feed.lastOK = time.Now() // the subscription starts: no stall before it has had time to answer
	j.feed.mu.Unlock()
	tick := time.NewTicker(feedPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		qctx, cancel := context.WithTimeout(ctx, feedPoll)
		p, err := pos.Position(qctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		j.feedAnswer(p, err, time.Now())
	}
}

// feedAnswer takes one answer of the bus (p, err) at now.
func (j *Judge) feedAnswer(p bus.Position, err error, now time.Time) {
	f := &j.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	known, stalled := err == nil && p.Known, f.stalledNs.Load() != 0
	switch {
	case !stalled && known:
		f.lastOK = now
	case !stalled && now.Sub(f.lastOK) >= feedStallAfter:
		f.stalledNs.Store(f.lastOK.UnixNano())
		j.log.Warn("the metric feed does not answer: placements take the nodes live when it last did as live, until it catches up",
			"as_of", f.lastOK.UTC().Format(time.RFC3339), "err", err)
	case stalled && known:
		if f.back.IsZero() {
			f.back = now
		}
		if !p.CaughtUp && now.Sub(f.back) < feedCatchUpMax {
			return
		}
		j.log.Info("the metric feed answers again: nodes are judged stale on the clock again", "caught_up", p.CaughtUp,
			"stalled_for", now.Sub(f.lastOK).Round(time.Second))
		f.back, f.lastOK = time.Time{}, now
		f.stalledNs.Store(0)
	}
}

// stalenessNow is the time staleness is judged at: now, or while the feed is stalled the
// time it last answered.
func (j *Judge) stalenessNow(now time.Time) time.Time {
	if ns := j.feed.stalledNs.Load(); ns != 0 && ns < now.UnixNano() {
		return time.Unix(0, ns)
	}
	return now
}

// feedStalledSince is when the feed stalled (zero: it is not).
func (j *Judge) feedStalledSince() time.Time {
	if ns := j.feed.stalledNs.Load(); ns != 0 {
		return time.Unix(0, ns).UTC()
	}
	return time.Time{}
}
