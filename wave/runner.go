package wave

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// The wave's instance runners: which instances this wave should run (its assignment and
// the leader election), starting, restarting and stopping one goroutine per instance.

// runner is one instance running on this wave.
type runner struct {
	def    []byte // the definition it runs; a change restarts it
	cancel context.CancelFunc
	done   chan struct{}
}

// reconcile starts a runner for each instance this wave should run and stops the rest.
func (w *Wave) reconcile(ctx context.Context) {
	ids, err := w.opts.Coord.List(ctx, cluster.Instances)
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		if ctx.Err() == nil {
			w.log.Warn("list instances", "err", err)
		}
		return
	}
	want := map[string][]byte{}
	for _, id := range ids {
		v, err := w.opts.Coord.Get(ctx, cluster.InstanceKey(id))
		if errors.Is(err, coord.ErrNotFound) || (err == nil && len(v.Data) == 0) {
			continue // removed, or an add that stopped before the definition (AddInstance)
		}
		run := false
		if err == nil {
			run, err = w.shouldRun(ctx, id)
		}
		if err != nil {
			// Only NotFound means "gone": a failed read (a timeout, a reconnecting
			// session) says nothing about the instance, so what runs keeps running.
			if ctx.Err() == nil {
				w.log.Warn("read instance; keeping its runner as it is", "instance", id, "err", err)
			}
			if def, ok := w.runningDef(id); ok {
				want[id] = def
			}
			continue
		}
		if run {
			want[id] = v.Data
		}
	}
	// Stop the runners no longer wanted (or whose definition changed) without holding
	// the lock: they update their status while stopping.
	w.mu.Lock()
	var stopped []string
	var stopping []*runner
	for id, r := range w.runners {
		if def, ok := want[id]; !ok || !slices.Equal(def, r.def) {
			r.cancel()
			stopping = append(stopping, r)
			stopped = append(stopped, id)
			delete(w.runners, id)
		}
	}
	w.mu.Unlock()
	for _, r := range stopping {
		<-r.done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.lookedOnce && ctx.Err() == nil {
		// A wave back after its failover took its instances runs none: say so, rather
		// than leave "wave running" to read as running what it ran before.
		w.lookedOnce = true
		switch {
		case len(ids) == 0:
			w.log.Info("no instance defined yet: binlake instance add defines one")
		case len(want) == 0:
			share := "the balancer gives it a share at its next rebalance (balancer.auto)"
			if !w.opts.Balancer.Auto {
				share = "binlake instance rebalance -apply gives it a share (balancer.auto is off)"
			}
			w.log.Info("no instance for this wave to run: the other waves run them; "+share, "instances", len(ids))
		default:
			w.log.Info("instances to run", "count", len(want), "of", len(ids))
		}
	}
	for _, id := range stopped {
		delete(w.status, id)
		w.m.instError.DeleteLabelValues(id)
		w.m.dropState(id)
	}
	if ctx.Err() != nil {
		return
	}
	for id, def := range want {
		if _, ok := w.runners[id]; ok {
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		r := &runner{def: def, cancel: cancel, done: make(chan struct{})}
		w.runners[id] = r
		w.status[id] = &InstanceStatus{ID: id, State: cluster.StateStandby, Since: time.Now().UTC().Format(time.RFC3339)}
		go func() {
			defer close(r.done)
			w.runInstance(rctx, id, def)
		}()
	}
}

// runningDef returns the definition the runner of id runs, if there is one.
func (w *Wave) runningDef(id string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.runners[id]
	if !ok {
		return nil, false
	}
	return r.def, true
}

// shouldRun: the assigned wave runs an instance; any wave stands by for an unassigned
// instance, or for one whose assigned wave has not been alive for FailoverGrace (the
// election fallback: the balancer normally reassigns it before), counted from when this
// wave saw it leave, or from when this wave began watching if it never saw it alive. An
// error is a failed read of the assignment, which decides nothing.
func (w *Wave) shouldRun(ctx context.Context, id string) (bool, error) {
	v, err := w.opts.Coord.Get(ctx, cluster.AssignKey(id))
	if errors.Is(err, coord.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	node := string(v.Data)
	if node == "" || node == w.opts.Node {
		return true, nil
	}
	a := w.members.Absence(node)
	return !a.Live && time.Since(a.Since) >= w.opts.Balancer.FailoverGrace, nil
}

// runInstance campaigns for an instance and runs its pipeline while leading, until ctx
// ends.
func (w *Wave) runInstance(ctx context.Context, id string, def []byte) {
	defer w.dropRecord(id)
	defer w.m.drop(id)
	log := w.log.With("instance", id)
	inst, perr := cluster.ParseInstance(def)
	// A pipeline that keeps failing at once (a source refusing the login, a secret
	// missing) is tried again after a pause that doubles up to reconnect_max_backoff, as
	// the capture's own reconnects are; a term that ran for that long starts it over.
	p := w.opts.Pipeline
	limit := max(p.RetryBackoff, p.ReconnectBackoffMax)
	retry := backoff.New(p.RetryBackoff, limit)
	failures := 0
	for ctx.Err() == nil {
		lead, err := w.opts.Coord.Campaign(ctx, cluster.LeaderKey(id), []byte(w.opts.Node))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("campaign failed", "err", err)
			backoff.Sleep(ctx, w.opts.Pipeline.RetryBackoff)
			continue
		}
		if w.withdrawn(ctx, id, def) {
			// Removed (RemoveInstance waits for this leadership to end before it deletes
			// the offset) or redefined since this runner started: a term now would start
			// the old definition, or start a removed one again from scratch. Let go and
			// leave the instance to the next poll, which stops or restarts this runner.
			log.Info("instance removed or redefined since this runner started: not leading it")
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = lead.Resign(rctx)
			cancel()
			backoff.Sleep(ctx, w.opts.Pipeline.RetryBackoff)
			continue
		}
		w.m.led.Inc()
		w.m.track(id)
		if failures == 0 {
			log.Info("leading instance", "token", lead.Token())
		} else {
			// Each retry leads again: said once, with the failure, not every few seconds.
			log.Debug("leading instance", "token", lead.Token(), "attempt", failures+1)
		}
		began := time.Now()
		if perr != nil {
			err = capture.Fatal(perr)
		} else {
			err = w.lead(ctx, inst, lead)
		}
		if time.Since(began) >= limit {
			retry.Reset()
			failures = 0
		}
		pause := p.RetryBackoff
		switch {
		case ctx.Err() != nil || errors.Is(err, errLost):
		case capture.IsFatal(err):
			// Retrying cannot fix it, and another wave would meet the same error: keep
			// the leadership, show the error, and wait for an operator (a changed
			// definition or a removal restarts the runner).
			if errors.Is(err, capture.ErrBinlogPurged) || errors.Is(err, capture.ErrPositionUnserved) {
				// The remedy where the error is read (list, show, /status), not only in
				// this wave's log (an outside trial).
				err = fmt.Errorf("%w; `binlake instance snapshot %s` restarts it at the source's current end with a snapshot of its tables", err, id)
			}
			log.Error("instance stopped: operator action needed", "err", err)
			w.setStatus(id, func(s *InstanceStatus) { s.fail(cluster.StateError, err) })
			if (errors.Is(err, capture.ErrBinlogPurged) || errors.Is(err, capture.ErrPositionUnserved)) && inst != nil {
				// The fix the runbook names: a snapshot, which restarts it at the
				// source's end (resnapshot.go); for a position the source cannot send
				// from, the other fix, a new start, is a new definition.
				if w.awaitResnapshot(ctx, inst, lead, log) {
					err, pause = errResnapshot, 0
				}
				break
			}
			select {
			case <-ctx.Done():
			case <-lead.Lost():
			}
		case err != nil:
			failures++
			if r := Reason(err); r != ReasonBusUnreachable && r != ReasonBusRefused && r != ReasonSecretMissing {
				// The source failed as the term began (unreachable, a refused login):
				// the capture counts the failures of its connection after that
				// (OnError), and BinlakeWaveSourceErrors never saw a source down from
				// the start.
				w.m.reconnects.WithLabelValues(id).Inc()
			}
			pause = retry.NextBackOff()
			log.Warn("pipeline failed; restarting after a pause", "err", err, "attempt", failures, "pause", pause.Round(time.Millisecond))
			w.setStatus(id, func(s *InstanceStatus) { s.fail(cluster.StateRetrying, err) })
		}
		w.m.led.Dec()
		w.m.forget(id)
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if rerr := lead.Resign(rctx); rerr != nil {
			log.Debug("resign", "err", rerr)
		}
		cancel()
		if ctx.Err() == nil && !capture.IsFatal(err) {
			w.setStatus(id, func(s *InstanceStatus) {
				if s.State != cluster.StateRetrying {
					s.State = cluster.StateStandby
				}
			})
			backoff.Sleep(ctx, pause)
		}
	}
}

// withdrawn reports whether instance id's stored definition is no longer def: removed,
// being removed (empty) or changed. A failed read says nothing: the term goes ahead, its
// offset's version check fencing it as always.
func (w *Wave) withdrawn(ctx context.Context, id string, def []byte) bool {
	v, err := w.opts.Coord.Get(ctx, cluster.InstanceKey(id))
	if errors.Is(err, coord.ErrNotFound) {
		return true
	}
	return err == nil && !bytes.Equal(v.Data, def)
}

func (w *Wave) stopRunners() {
	w.mu.Lock()
	rs := w.runners
	w.runners = map[string]*runner{}
	w.mu.Unlock()
	for _, r := range rs {
		r.cancel()
	}
	for _, r := range rs {
		<-r.done
	}
}
