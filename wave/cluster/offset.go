package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/binlake/binlake/internal/coord"
)

// InvalidOffsetError is a committed offset that is not valid JSON: retrying cannot fix it.
type InvalidOffsetError struct {
	Key string
	Err error
}

func (e *InvalidOffsetError) Error() string {
	return fmt.Sprintf("offset %s is not valid JSON: %v", e.Key, e.Err)
}
func (e *InvalidOffsetError) Unwrap() error { return e.Err }

// ReadOffset returns the committed offset of instance id and its version, or ok=false
// when none is.
func ReadOffset(ctx context.Context, c coord.Coordinator, id string) (p Position, version int64, ok bool, err error) {
	key := OffsetKey(id)
	v, err := c.Get(ctx, key)
	if errors.Is(err, coord.ErrNotFound) {
		return p, coord.NoVersion, false, nil
	}
	if err != nil {
		return p, 0, false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(v.Data, &p); err != nil {
		return p, 0, false, &InvalidOffsetError{Key: key, Err: err}
	}
	return p, v.Version, true, nil
}
