//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
)

// requireLiveNode refuses `instance add|move -node` to a wave that is not live: the
// instance would be captured nowhere until that wave starts (or until the balancer took
// it back), while the command said "assigned". -force is for a wave yet to start.
func requireLiveNode(ctx context.Context, c coord.Coordinator, sub, node string, force bool) error {
	if node == "" || force {
		return nil
	}
	if err := cluster.RequireLive(ctx, c, node); err != nil {
		if errors.Is(err, cluster.ErrNotLive) {
			return fmt.Errorf("instance %s: -node: %w; give a live wave, or -force to assign to a wave yet to start", sub, err)
		}
		return fmt.Errorf("instance %s: %w", sub, err)
	}
	return nil
}

// noLiveWave explains a placement (add or move without -node) that found no live wave to
// place instance id on, saying what to do instead; other errors pass unchanged. An up's
// folder never has one: its wave lives only while up runs, and up must be stopped for
// binlake instance to open the folder, so there -node -force is the way.
func (ic *instanceCmd) noLiveWave(err error, id string) error {
	if !errors.Is(err, cluster.ErrNoWave) {
		return err
	}
	if ic.upData {
		return fmt.Errorf("instance %s: %w to place %s on while up is stopped: give -node with up's node (its --node, by default the host name, %s) and -force; up's wave captures it at up's next start with --mysql", ic.sub, err, id, dash(hostname()))
	}
	return fmt.Errorf("instance %s: %w to place %s on; start a wave, or give -node with -force to assign to a wave yet to start", ic.sub, err, id)
}

// sayHowChosen says, after `instance add|move`, how the wave was chosen: by -node (and,
// with -force, that it is not live), by the judge (its reasoning, and which judge: -judge
// or the balancer.judge of the -config file), or at random for want of a judge.
func sayHowChosen(ctx context.Context, out io.Writer, c coord.Coordinator, node string, byNode bool, jp *judgePlacer, judgeURL, judgeFrom, cfgPath string) {
	switch {
	case byNode:
		if err := cluster.RequireLive(ctx, c, node); errors.Is(err, cluster.ErrNotLive) {
			fmt.Fprintf(out, "given with -node -force: %s; the instance is captured once that wave starts, unless a running balancer places it on a live wave first (after its balancer.failover_grace)\n", err)
		}
	case jp != nil && jp.answer != nil:
		fmt.Fprintln(out, describePlacement(jp.answer))
		fmt.Fprintf(out, "the judge: %s (%s)\n", judgeURL, judgeFrom)
	case jp == nil && cfgPath != "":
		fmt.Fprintf(out, "chosen at random among the live waves (no -judge, and %s sets no balancer.judge)\n", filepath.Base(cfgPath))
	case jp == nil:
		fmt.Fprintln(out, "chosen at random among the live waves (no -judge)")
	}
}
