package cluster

import (
	"context"

	"github.com/binlake/binlake/internal/coord"
)

// Handling is what an instance does with a change it cannot publish as it is: on_unreadable
// and on_too_large ("stop" or "skip"; "" leaves the instance's as it is).
type Handling struct {
	OnUnreadable, OnTooLarge string
}

// SetHandling changes instance id's on_unreadable and on_too_large in place: its wave
// sees its definition changed, lets its term go and starts again from the committed
// offset, so that an instance stopped on a statement logged as DML or on rows lacking
// columns gets past them (skip) without losing the rows after them, as a remove and an
// add from the source's position would. It says whether the definition changed.
func SetHandling(ctx context.Context, c coord.Coordinator, id string, h Handling) (bool, error) {
	return updateInstance(ctx, c, id, func(cur *Instance) (*Instance, error) {
		next := *cur
		if h.OnUnreadable != "" {
			next.OnUnreadable = h.OnUnreadable
		}
		if h.OnTooLarge != "" {
			next.OnTooLarge = h.OnTooLarge
		}
		return &next, nil
	})
}
