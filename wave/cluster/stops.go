package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// A wave that stops because it was asked to (SIGTERM, as a deploy restarts it) says so
// before its session ends: the balancer then gives it the failover grace to come back
// before it places its instances elsewhere, as it does a wave it has never seen alive. A
// wave whose session ended without the record (a crash, a lost host) took the session
// timeout to be seen gone, and is dead at once. The record outlives the session and is
// removed when the wave registers again, so that its existence alone says "stopped after
// it last registered", with no clock compared across hosts.

// StopRecord is what a wave writes at StoppedKey as it stops cleanly.
type StopRecord struct {
	At      time.Time `json:"at"`
	Version string    `json:"version,omitempty"`
}

// RecordStop writes node's StopRecord.
func RecordStop(ctx context.Context, c coord.Coordinator, node, version string) error {
	b, _ := json.Marshal(StopRecord{At: time.Now().UTC(), Version: version})
	if _, err := c.Put(ctx, StoppedKey(node), b, coord.AnyVersion); err != nil {
		return fmt.Errorf("record the stop of %s: %w", node, err)
	}
	return nil
}

// ClearStop removes node's StopRecord, if any: the wave is registered again.
func ClearStop(ctx context.Context, c coord.Coordinator, node string) error {
	err := c.Delete(ctx, StoppedKey(node), coord.AnyVersion)
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		return fmt.Errorf("clear the stop record of %s: %w", node, err)
	}
	return nil
}

// StoppedCleanly reports whether node's last process stopped cleanly after it last
// registered.
func StoppedCleanly(ctx context.Context, c coord.Coordinator, node string) (bool, error) {
	_, err := c.Get(ctx, StoppedKey(node))
	switch {
	case errors.Is(err, coord.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the stop record of %s: %w", node, err)
	}
	return true, nil
}
