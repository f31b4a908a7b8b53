//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/wave/cluster"
)

// suiteDeps are what the sinks need before they start, all in the data folder or in
// this process: the single-node coordinator, the SQLite store and the in-process bus
// with a subscription each for the judge and the alarm.
type suiteDeps struct {
	coord              *single.Coordinator
	store              *sqlite.Store
	storePath          string
	bus                *memory.Bus
	judgeSub, alarmSub bus.Subscriber
	// relay takes what is posted to the judge's POST /v1/metrics onto the bus, so that
	// the alarm sees a remote agent's batches too (judge.Options.Relay).
	relay   bus.Publisher
	closers closeStack
}

func openSuiteDeps(ctx context.Context, dir string, logger *slog.Logger) (*suiteDeps, error) {
	d := &suiteDeps{storePath: filepath.Join(dir, StoreFile)}
	// d is not a named result, so that returning nil cannot hide from the cleanup what
	// opened before the failure (the coordinator and its lock, the store).
	if err := d.open(ctx, dir, logger); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// open opens the dependencies in order, pushing each one's Close as it opens.
func (d *suiteDeps) open(ctx context.Context, dir string, logger *slog.Logger) (err error) {
	if d.coord, err = single.New(single.Options{Path: filepath.Join(dir, CoordFile)}); err != nil {
		return err
	}
	d.closers.push(d.coord.Close)
	if d.store, err = sqlite.Open(sqlite.Options{Path: d.storePath}); err != nil {
		return err
	}
	d.closers.push(d.store.Close)
	// Judge and alarm read each batch within milliseconds and the judge's history lives in
	// SQLite, so the bus only has to cover a stalled consumer: 8 MiB is about half a day.
	if d.bus, err = memory.New(memory.Options{RetainBytes: 8 << 20, Logger: logger}); err != nil {
		return err
	}
	d.closers.push(d.bus.Close)
	if err := d.bus.CreateTopic(ctx, bus.TopicSpec{Name: metric.Topic, Partitions: 1}); err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	// Two groups, so the judge and the alarm each see every batch; from the first
	// message, so none published before a subscriber joined is missed.
	if d.judgeSub, err = d.bus.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: "binlake-judge", StartAt: bus.StartFirst}); err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	d.closers.push(d.judgeSub.Close)
	if d.alarmSub, err = d.bus.Subscriber(bus.SubscribeOptions{Topic: metric.Topic, Group: alarm.DefaultGroup, StartAt: bus.StartFirst}); err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	d.closers.push(d.alarmSub.Close)
	if d.relay, err = d.bus.Publisher(); err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	d.closers.push(d.relay.Close)
	return nil
}

func (d *suiteDeps) close() { d.closers.close() }

// closeStack holds what `up` opened, in order; close closes it last first, once.
type closeStack []func() error

func (c *closeStack) push(close func() error) { *c = append(*c, close) }

func (c *closeStack) close() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

// checkPolicies warns about policies that watch no metric the store has ever held, nor a
// canonical one: most likely a typo.
func (d *suiteDeps) checkPolicies(ctx context.Context, log *slog.Logger, pols []*policy.Policy, polFile string) {
	names, err := d.store.Names(ctx)
	if err != nil {
		log.Warn("reading the metric names in the store, for the policies' check", "store", d.storePath, "err", err)
		return
	}
	if polFile == "" {
		polFile = "the built-in policies"
	}
	logUnknownMetrics(log, pols, polFile, knownMetricNames(names), "a canonical metric, one the agents' collectors send, or one in "+d.storePath)
}

// sayUncaptured warns when the folder's coordinator holds capture instances (binlake
// instance add -data) and up runs without -mysql: no wave runs them, and up would
// otherwise say nothing of them.
func (d *suiteDeps) sayUncaptured(ctx context.Context, log *slog.Logger) {
	ids, err := cluster.ListInstances(ctx, d.coord)
	if err != nil || len(ids) == 0 {
		return
	}
	log.Warn("the data folder holds capture instances that no wave runs without -mysql", "instances", len(ids), "ids", strings.Join(ids[:min(len(ids), 5)], ", "))
}
