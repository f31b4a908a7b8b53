package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/binlake/binlake/internal/coord"
)

// updateInstance changes instance id's definition in place by edit, compare-and-set, read
// again when another writer got there first. The instance's wave sees its definition
// changed, lets its term go and starts it again from the committed offset. It says
// whether the definition changed (an edit that changes nothing writes nothing).
func updateInstance(ctx context.Context, c coord.Coordinator, id string, edit func(cur *Instance) (*Instance, error)) (bool, error) {
	for range 5 {
		v, err := c.Get(ctx, InstanceKey(id))
		if errors.Is(err, coord.ErrNotFound) {
			return false, fmt.Errorf("instance %s: %w", id, coord.ErrNotFound) // as move, show and remove say it
		}
		if err != nil {
			return false, fmt.Errorf("read instance %s: %w", id, err)
		}
		cur, err := ParseInstance(v.Data)
		if err != nil {
			return false, err
		}
		next, err := edit(cur)
		if err != nil {
			return false, err // edit's errors name the instance
		}
		if err := next.Validate(); err != nil {
			return false, fmt.Errorf("instance %s: %w", id, err)
		}
		data, err := next.Marshal()
		if err != nil {
			return false, err
		}
		if bytes.Equal(data, v.Data) {
			return false, nil
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
