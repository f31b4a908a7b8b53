package alarm

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/bus"
)

// ownership keeps which nodes this alarm process evaluates. kafka-go's consumer-group
// reader neither announces assignments nor revocations, so the alarm learns each node's
// partition from the messages it handles and asks the bus (bus.Positioner, a
// DescribeGroups and offsets round trip) which partitions it holds and whether it reads
// them up to date. Nodes on partitions it no longer holds are released from the engine
// without a page; when it gains partitions it reloads the notification log, so alerts
// another process fired continue here; while it is behind (a broker outage, a
// rebalance) the engine holds nodata. A subscriber without Positioner (the in-process
// bus; pos is nil) has one member that owns everything it reads.
type ownership struct {
	pos bus.Positioner
	eng *Engine
	log *slog.Logger
	// draining lists the processes that left the group to stop and still deliver their
	// claims (DrainingGroup); nil: none are asked for.
	draining func(ctx context.Context) ([]string, error)

	mu     sync.Mutex
	parts  map[string]int // node → partition, from the messages handled and the node book
	owned  map[int]bool   // at the last known position
	strays int            // messages handled from partitions outside owned
	// The bus's progress, for a stall its answers are too slow to show (watch): when a
	// message was last handled, when the poll in flight went out (zero: none is), whether
	// the last one failed; held is set while watch holds the engine, until an answer
	// asked after it (a poll numbered above heldAt) says the process caught up.
	now        func() time.Time
	lastMsg    time.Time
	pollStart  time.Time
	pollFailed bool
	polls      uint64
	held       bool
	heldAt     uint64
	// heldQuiet: held while owning no partition (heldLevel).
	heldQuiet bool
	// lapsed is set when this process may have left the group unseen since the last
	// answer (an answer failed or did not know, the stream stalled, the process was
	// paused): the group may have given its partitions to another process meanwhile,
	// whose decisions this process's copy of the log lacks, so the next answer reloads
	// them as gained (see poll).
	lapsed bool
	// answered: a position answer has been applied; before the first, a start's failed
	// polls are no lapse worth a word in the log. tookOver: the first answer's partitions
	// were taken over (the notification log and the node book read for them).
	answered, tookOver bool
	// onGain is told the partitions this process gained, onRelease those it lost, before
	// their nodes are released.
	onGain    func(ctx context.Context, gained []int)
	onRelease func(ctx context.Context, lost []int)
}

// learn records the partitions of nodes known from the node book, not from their
// messages (a silent node sends none), so that they are released with their partition.
func (o *ownership) learn(parts map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for node, p := range parts {
		if _, ok := o.parts[node]; !ok {
			o.parts[node] = p
		}
	}
}

// holding returns the node → partition map and the partitions this process holds (every
// partition it knows of without a Positioner).
// tookOverOnce says whether the partitions of the bus's first answer were taken over:
// until then the alarm lists none of the alerts it will hold (a restart restores them
// with its partitions).
func (o *ownership) tookOverOnce() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pos == nil || o.tookOver
}

// owns says whether node's partition is one this process holds, once it took over the
// bus's first answer (every node without a Positioner).
func (o *ownership) owns(node string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pos == nil {
		return true
	}
	p, ok := o.parts[node]
	return ok && o.tookOver && o.owned[p]
}

func (o *ownership) holding() (map[string]int, []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	parts := maps.Clone(o.parts)
	var held []int
	if o.pos == nil {
		seen := map[int]bool{}
		for _, p := range parts {
			seen[p] = true
		}
		held = slices.Sorted(maps.Keys(seen))
	} else {
		held = slices.Sorted(maps.Keys(o.owned))
	}
	return parts, held
}

// seen records the partition of a message before the engine observes it. A partition
// the last answer did not give this process is news from the reader, which fetches a
// newly assigned partition at once, up to a poll interval before the bus's answer says
// so: its backlog (behind by the session timeout when its previous owner crashed) is
// replayed with the points' own times, and until the poll judges it read up to date
// the engine must hold nodata and staleness, or those old points page nodata for live
// nodes and resolve firing alerts early (issue 18, item 9). A revoked partition's last
// buffered messages stray the same way, for one poll.
func (o *ownership) seen(node string, partition int) {
	o.mu.Lock()
	o.parts[node] = partition
	if o.pos != nil {
		o.lastMsg = o.clock()
	}
	if o.pos != nil && !o.owned[partition] {
		o.strays++
		o.eng.SetCaughtUp(false)
	}
	o.mu.Unlock()
}

func (o *ownership) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

// poll asks the bus once and applies the answer.
func (o *ownership) poll(ctx context.Context) {
	o.mu.Lock()
	strays := o.strays
	o.polls++
	n := o.polls
	o.pollStart = o.clock()
	o.mu.Unlock()
	p, err := o.pos.Position(ctx)
	o.mu.Lock()
	o.pollStart, o.pollFailed = time.Time{}, err != nil || !p.Known
	if o.pollFailed {
		o.lapsed = true
	}
	o.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("bus position unknown; holding nodata", "err", err)
		}
		o.eng.SetCaughtUp(false)
		return
	}
	if !p.Known {
		o.eng.SetCaughtUp(false)
		return
	}
	live := p.Processes
	if o.draining != nil {
		// Read after the group's answer: a process that left it announced its drain
		// before leaving, so it is in one answer or the other.
		if d, err := o.draining(ctx); err == nil {
			live = withDraining(live, d)
		} else if ctx.Err() == nil {
			o.log.Warn("the processes delivering their claims could not be read; their claims may be paged again", "err", err)
		}
	}
	o.eng.SetMembers(p.Process, live)
	owned := make(map[int]bool, len(p.Partitions))
	var gained, lost []int
	o.mu.Lock()
	lapsed := o.lapsed && o.answered
	o.lapsed, o.answered = false, true
	for _, part := range p.Partitions {
		owned[part] = true
		if !o.owned[part] || lapsed {
			// After a lapse a partition held before may have been another process's
			// meanwhile (a pause or an outage past the group's session timeout, and a
			// rejoin that got the same partitions back): what it decided is in the log,
			// not in this process's copy (t10: an alert it fired and its resolution went
			// unseen here for a minute, until the log's periodic reload).
			gained = append(gained, part)
		}
	}
	for part := range o.owned {
		if !owned[part] {
			lost = append(lost, part)
		}
	}
	o.owned = owned
	o.mu.Unlock()
	if len(lost) > 0 && o.onRelease != nil {
		slices.Sort(lost)
		o.onRelease(ctx, lost)
	}
	o.mu.Lock()
	var released []string
	for node, part := range o.parts {
		if !owned[part] {
			released = append(released, node)
			delete(o.parts, node)
		}
	}
	o.mu.Unlock()
	if len(released) > 0 {
		slices.Sort(released)
		o.log.Info("partitions moved to another alarm process; releasing their nodes", "nodes", released)
		o.eng.Release(released)
	}
	if lapsed && len(gained) > 0 {
		o.log.Info("the bus answers after a lapse; reloading what another process may have decided meanwhile", "partitions", gained)
	}
	if len(gained) > 0 && o.onGain != nil {
		o.onGain(ctx, gained)
	}
	o.mu.Lock()
	o.tookOver = true
	o.mu.Unlock()
	// A stray handled since the question went out is newer than the answer. Under o.mu,
	// so a stray's hold cannot be overtaken by this answer.
	o.mu.Lock()
	caughtUp := p.CaughtUp && o.strays == strays
	if o.held {
		if n <= o.heldAt || !caughtUp {
			caughtUp = false // asked before the stall was seen, or still behind
		} else {
			o.held = false
			o.log.Log(context.Background(), o.heldLevel(slog.LevelInfo), "the bus answers again and this process caught up; nodata and staleness resume after one interval")
		}
	}
	o.eng.SetCaughtUp(caughtUp)
	o.mu.Unlock()
}

// watch holds nodata and staleness as soon as the bus stalls, before its position answer
// fails: a broker that stops answering (paused, partitioned) fails a poll only at its
// timeout, seconds on, and with batches every second nodata windows (3 s) and staleness
// (5 s) ran out first (every node paged agent-dead, firing alerts resolved as stale). It
// holds when no message was handled for longer than after and the position is unknown:
// the last poll failed, or the one in flight has been out for longer than after (an
// answer takes milliseconds). The hold lasts until an answer asked after it says the
// process caught up.
func (o *ownership) watch(after time.Duration) {
	now := o.clock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pos == nil || o.held || o.lastMsg.IsZero() {
		return // nothing read yet: the start holds the engine until the first answer (run)
	}
	unknown := o.pollFailed || !o.pollStart.IsZero() && now.Sub(o.pollStart) > after
	if !unknown || now.Sub(o.lastMsg) <= after {
		return
	}
	o.held, o.heldAt, o.lapsed = true, o.polls, true
	// A process that owned no partition at the last answer expects nothing: the quiet
	// of a group's rebalance is no stall worth a warning there.
	o.heldQuiet = len(o.owned) == 0
	o.log.Log(context.Background(), o.heldLevel(slog.LevelWarn), "the bus delivers nothing and its position is unknown; holding nodata and staleness",
		"quiet_for", now.Sub(o.lastMsg).Round(time.Millisecond), "partitions", len(o.owned))
	o.eng.SetCaughtUp(false)
}

// heldLevel is the level of what watch and the next answer say of a hold: debug for a
// process that owned no partition when it was held (heldQuiet).
func (o *ownership) heldLevel(l slog.Level) slog.Level {
	if o.heldQuiet {
		return slog.LevelDebug
	}
	return l
}

// lapse tells that this process was paused (its timer ran late): it may have left the
// group unseen (see lapsed), and its reader stood still while its partitions grew. The
// engine is held until an answer asked after the next one says it caught up: the bus
// judges that against the partitions' ends at the question before, and the next answer's
// question before was asked before the pause, so it calls the pause's backlog read (a
// CI run: a reader that came back through an i/o timeout read nothing for seven seconds
// after the resume while the first answer said caught up, and seven nodes paged nodata).
func (o *ownership) lapse() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lapsed = true
	if o.pos == nil {
		return
	}
	if !o.held {
		o.heldQuiet = len(o.owned) == 0
	}
	o.held, o.heldAt = true, max(o.heldAt, o.polls+1)
	o.eng.SetCaughtUp(false)
}

// run polls every interval until ctx ends. Until the first answer the engine holds
// nodata: a starting process replays its backlog first.
func (o *ownership) run(ctx context.Context, every time.Duration) {
	o.eng.SetCaughtUp(false)
	after := max(every, 500*time.Millisecond)
	go func() {
		t := time.NewTicker(after / 4)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				o.watch(after)
			}
		}
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		o.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
