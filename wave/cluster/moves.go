package cluster

import (
	"context"
	"encoding/json"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// MoveRecord is the record of an instance's last move, written at MovedKey by every
// move the balancer or `binlake instance move` makes; the planner's cooldown reads it
// (a failover's starts none: wave/balancer's readCluster).
type MoveRecord struct {
	At     time.Time `json:"at"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
}

// ReadMoveRecord reads instance id's move record; false when it has none (or none that
// parses).
func ReadMoveRecord(ctx context.Context, c coord.Coordinator, id string) (MoveRecord, bool) {
	var r MoveRecord
	v, err := c.Get(ctx, MovedKey(id))
	if err != nil || json.Unmarshal(v.Data, &r) != nil {
		return r, false
	}
	return r, true
}
