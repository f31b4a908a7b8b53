//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// stage is a group of the suite's parts that stop together: the first part to fail, or
// to return while it should be running, cancels the others. `binlake up` runs two, so
// that it can stop the sources before the sinks.
type stage struct {
	g      *errgroup.Group
	ctx    context.Context // the parts' context: ends with stop or the first failure
	cancel context.CancelFunc
}

func newStage(parent context.Context) *stage {
	ctx, cancel := context.WithCancel(parent)
	g, gctx := errgroup.WithContext(ctx)
	return &stage{g: g, ctx: gctx, cancel: cancel}
}

// run starts a part; its error is named after it.
func (s *stage) run(name string, part func(context.Context) error) {
	s.g.Go(func() error {
		err := part(s.ctx)
		if err == nil && s.ctx.Err() == nil {
			err = errors.New("stopped unexpectedly")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
}

// stop ends the stage's parts and waits for them until deadline fires, then gives up
// on them (the process is about to exit) and says which budget ran out.
func (s *stage) stop(deadline <-chan time.Time, budget time.Duration) error {
	s.cancel()
	done := make(chan error, 1)
	go func() { done <- s.g.Wait() }()
	select {
	case err := <-done:
		return err
	case <-deadline:
		return fmt.Errorf("shutdown: the parts did not stop within %s", budget)
	}
}
