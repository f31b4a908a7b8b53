package bus

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/binlake/binlake/internal/backoff"
)

// TopicCreator creates topics: a Bus, or the part of one a producer was given.
type TopicCreator interface {
	CreateTopic(ctx context.Context, spec TopicSpec) error
}

// Recreating a topic deleted under a producer (ErrUnknownTopic on a write to a topic it
// created at its start): a few attempts with a backoff, each bounded, so that one write's
// failure costs seconds, not the caller's whole context. A topic being deleted can still
// be listed for a moment, and CreateTopic then waits for leaders that never come.
const (
	recreateAttempts = 3
	recreateFirst    = 500 * time.Millisecond
	recreateMax      = 2 * time.Second
	recreateTimeout  = 30 * time.Second
)

// RecreateTopic creates spec's topic again, with the spec the producer created it with
// at its start (partitions, replication, message size), after a write to it failed with
// cause (an ErrUnknownTopic: the topic was deleted). It tries recreateAttempts times
// with a backoff and returns the last error, naming the topic, or nil once the topic
// exists and its partitions have leaders. log says what it does (nil: slog.Default()).
func RecreateTopic(ctx context.Context, c TopicCreator, spec TopicSpec, cause error, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	log.Warn("a write found the topic missing (deleted?); creating it again as at the start",
		"topic", spec.Name, "partitions", max(spec.Partitions, 1), "replication", max(spec.Replication, 1), "err", cause)
	bo := backoff.New(recreateFirst, recreateMax)
	var err error
	for attempt := 1; attempt <= recreateAttempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, recreateTimeout)
		err = c.CreateTopic(actx, spec)
		cancel()
		switch {
		case err == nil:
			log.Info("topic created again; writing to it", "topic", spec.Name, "attempts", attempt)
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("create topic %s again: %w", spec.Name, ctx.Err())
		case attempt < recreateAttempts:
			backoff.Sleep(ctx, bo.NextBackOff())
		}
	}
	return fmt.Errorf("create deleted topic %s again (%d attempts): %w", spec.Name, recreateAttempts, err)
}
