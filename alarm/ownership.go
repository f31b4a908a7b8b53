package alarm

import (
	"context"
	"log/slog"
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
// bus) has one member that owns everything.
type ownership struct {
	pos bus.Positioner
	eng *Engine
	log *slog.Logger

	mu     sync.Mutex
	parts  map[string]int // node → partition, from the messages handled
	owned  map[int]bool   // at the last known position
	strays int            // messages handled from partitions outside owned
	onGain func(ctx context.Context)
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
	if !o.owned[partition] {
		o.strays++
		o.eng.SetCaughtUp(false)
	}
	o.mu.Unlock()
}

// poll asks the bus once and applies the answer.
func (o *ownership) poll(ctx context.Context) {
	o.mu.Lock()
	strays := o.strays
	o.mu.Unlock()
	p, err := o.pos.Position(ctx)
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
	owned := make(map[int]bool, len(p.Partitions))
	gained := false
	o.mu.Lock()
	for _, part := range p.Partitions {
		owned[part] = true
		gained = gained || !o.owned[part]
	}
	o.owned = owned
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
	if gained && o.onGain != nil {
		o.onGain(ctx)
	}
	// A stray handled since the question went out is newer than the answer. Under o.mu,
	// so a stray's hold cannot be overtaken by this answer.
	o.mu.Lock()
	o.eng.SetCaughtUp(p.CaughtUp && o.strays == strays)
	o.mu.Unlock()
}

// run polls every interval until ctx ends. Until the first answer the engine holds
// nodata: a starting process replays its backlog first.
func (o *ownership) run(ctx context.Context, every time.Duration) {
	o.eng.SetCaughtUp(false)
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
