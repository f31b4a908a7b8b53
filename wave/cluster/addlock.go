package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// addLockWait bounds how long an add waits for another to finish. An add holds the lock
// for a few coordinator round trips (and a placement); a longer hold is an add whose
// process died, which the coordinator ends with its session.
const addLockWait = 30 * time.Second

// lockAdds makes the adds of a cluster one at a time, whatever host runs them: each
// checks the others' definitions (CheckAdd) and then writes its own, and two adds at
// once would each pass the other's server_id check and then end each other's binlog
// connections for ever. It returns the release, which also works after ctx ended.
func lockAdds(ctx context.Context, c coord.Coordinator, id string) (func(), error) {
	wctx, cancel := context.WithTimeout(ctx, addLockWait)
	defer cancel()
	lead, err := c.Campaign(wctx, AddLockKey, []byte(id))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			holder, _ := c.Leader(ctx, AddLockKey)
			return nil, fmt.Errorf("instance %s: another instance add (of %q) has held %s for %s: try again once it ended",
				id, holder, AddLockKey, addLockWait)
		}
		return nil, fmt.Errorf("instance %s: wait for other instance adds: %w", id, err)
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = lead.Resign(rctx) // the session's end releases it otherwise
	}, nil
}
