package cluster

import (
	"context"
	"errors"
	"fmt"

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
	for range 5 {
		v, err := c.Get(ctx, InstanceKey(id))
		if errors.Is(err, coord.ErrNotFound) {
			return false, fmt.Errorf("instance %s: %w", id, coord.ErrNotFound) // as move, show and remove say it
		}
		if err != nil {
			return false, fmt.Errorf("read instance %s: %w", id, err)
		}
		inst, err := ParseInstance(v.Data)
		if err != nil {
			return false, err
		}
		next := *inst
		if h.OnUnreadable != "" {
			next.OnUnreadable = h.OnUnreadable
		}
		if h.OnTooLarge != "" {
			next.OnTooLarge = h.OnTooLarge
		}
		if err := next.Validate(); err != nil {
			return false, fmt.Errorf("instance %s: %w", id, err)
		}
		if next.OnUnreadable == inst.OnUnreadable && next.OnTooLarge == inst.OnTooLarge {
			return false, nil
		}
		data, err := next.Marshal()
		if err != nil {
			return false, err
		}
		_, err = c.Put(ctx, InstanceKey(id), data, v.Version)
		if errors.Is(err, coord.ErrVersionConflict) {
			continue // written meanwhile (a move, another set): read it again
		}
		if err != nil {
			return false, fmt.Errorf("write instance %s: %w", id, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("instance %s: changed by others at every try; try again", id)
}
