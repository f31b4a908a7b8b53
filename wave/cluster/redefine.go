package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/binlake/binlake/internal/coord"
)

// ErrSourceChanged refuses a redefinition that reads another source: the committed
// offset is a position in this source's binlog.
var ErrSourceChanged = errors.New("a redefinition keeps the source: its committed offset is a position in this source's binlog; " +
	"remove the instance and add it again (with a start) to read another, or switch servers behind the same address")

// Redefine replaces instance def.ID's definition in place: subscriptions, the source's
// user, password and server_id, on_unreadable, on_too_large, snapshot and pinned. The
// instance's wave starts it again from the committed offset, so nothing written since is
// lost, as it is when a remove and an add begin at the source's end; a table newly
// subscribed comes from that offset on (its older rows by a snapshot). The source's
// address (one reaching the same server is the same) stays, and so does the flavor once
// the offset holds a GTID set (a wrong one is fixed before), and where the instance
// first began (start and the add's time): a start that differs is refused.
// A new server_id is checked against the other instances of the source, as an add's is.
// It says whether the definition changed.
func Redefine(ctx context.Context, c coord.Coordinator, def *Instance) (bool, error) {
	if err := def.Validate(); err != nil {
		return false, fmt.Errorf("instance: %w", err)
	}
	checked := false
	return updateInstance(ctx, c, def.ID, func(cur *Instance) (*Instance, error) {
		if !SameSource(ctx, cur.Source.Addr, def.Source.Addr) {
			return nil, fmt.Errorf("instance %s: source %s (%s) would become %s (%s): %w", def.ID, cur.Source.Addr, cur.Source.Flavor, def.Source.Addr, def.Source.Flavor, ErrSourceChanged)
		}
		if cur.Source.Flavor != def.Source.Flavor {
			// A wrong flavor is fixed here while the offset is a file and position (a
			// wave commits its first start's before it connects, and a wrong flavor
			// fails at once): a GTID set is written in its flavor's syntax.
			off, _, committed, err := ReadOffset(ctx, c, def.ID)
			if err != nil {
				return nil, err
			}
			if committed && off.GTIDSet != "" {
				return nil, fmt.Errorf("instance %s: flavor %s would become %s, and the committed offset holds a %s GTID set (%s); "+
					"remove the instance and add it again with a start to read the source as %s", def.ID, cur.Source.Flavor, def.Source.Flavor,
					cur.Source.Flavor, off.GTIDSet, def.Source.Flavor)
			}
		}
		if def.Start != nil && (cur.Start == nil || *def.Start != *cur.Start) {
			return nil, fmt.Errorf("instance %s: start %s differs from where the instance began (%s): a redefinition resumes from the committed offset; "+
				"leave start out, or remove the instance and add it again to begin elsewhere", def.ID, def.Start, startText(cur))
		}
		next := *def
		next.Source.Addr = cur.Source.Addr
		next.Start, next.AddedAt = cur.Start, cur.AddedAt
		if next.Source.ServerID != cur.Source.ServerID && !checked {
			if err := checkServerID(ctx, c, &next); err != nil {
				return nil, err
			}
			checked = true
		}
		return &next, nil
	})
}

// startText says where an instance began, for an error.
func startText(inst *Instance) string {
	if inst.Start != nil {
		return inst.Start.String()
	}
	return "the source's binlog at the add"
}
