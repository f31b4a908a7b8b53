package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/binlake/binlake/internal/coord"
)

// GetInstance reads and validates the stored definition of instance id; an instance
// without one is coord.ErrNotFound.
func GetInstance(ctx context.Context, c coord.Coordinator, id string) (*Instance, error) {
	v, err := c.Get(ctx, InstanceKey(id))
	if errors.Is(err, coord.ErrNotFound) || (err == nil && len(v.Data) == 0) {
		return nil, fmt.Errorf("instance %s: %w", id, coord.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", id, err)
	}
	inst, err := ParseInstance(v.Data)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", id, err)
	}
	return inst, nil
}
