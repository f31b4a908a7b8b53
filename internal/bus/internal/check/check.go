// Package check holds the rules both bus implementations apply the same way, so that a
// topic name or spec valid for one is valid for the other.
package check

import (
	"context"
	"errors"
	"fmt"

	"github.com/binlake/binlake/internal/bus"
)

// TopicSpec validates spec and returns it with its defaults filled in.
func TopicSpec(spec bus.TopicSpec) (bus.TopicSpec, error) {
	if err := bus.CheckTopicName(spec.Name); err != nil {
		return spec, fmt.Errorf("create topic: %w", err)
	}
	switch {
	case spec.Partitions < 0:
		return spec, fmt.Errorf("create topic %s: partitions %d is negative", spec.Name, spec.Partitions)
	case spec.Replication < 0:
		return spec, fmt.Errorf("create topic %s: replication %d is negative", spec.Name, spec.Replication)
	case spec.MaxMessageBytes < 0:
		return spec, fmt.Errorf("create topic %s: max message bytes %d is negative", spec.Name, spec.MaxMessageBytes)
	}
	if spec.Partitions == 0 {
		spec.Partitions = 1
	}
	if spec.Replication == 0 {
		spec.Replication = 1
	}
	return spec, nil
}

// SubscribeOptions validates opts.
func SubscribeOptions(opts bus.SubscribeOptions) error {
	if err := bus.CheckTopicName(opts.Topic); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if opts.Group == "" {
		return fmt.Errorf("subscribe to %s: group is empty", opts.Topic)
	}
	if opts.StartAt != bus.StartFirst && opts.StartAt != bus.StartLast {
		return fmt.Errorf("subscribe to %s: unknown start position %d", opts.Topic, opts.StartAt)
	}
	return nil
}

// Canceled reports whether err only says that ctx ended: a handler that returns
// ctx.Err() after cancellation did not fail, so Subscribe returns nil for it.
func Canceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
