//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// checkTablesOnSource refuses a snapshot of named tables the source does not have (a
// misspelt or dropped table was accepted, and `instance show` then said "done, 0 rows").
// It asks the source with the password as this host has it, as `instance add` reads the
// source's start; where it cannot (the password only on the waves' hosts, the source
// down), it says so and the request goes ahead: the snapshot then skips such a table,
// which `instance show` lists.
func (ic *instanceCmd) checkTablesOnSource(tables []string) error {
	inst, err := cluster.GetInstance(ic.cctx, ic.c, ic.id)
	if err != nil {
		return err // RequestSnapshot would say the same
	}
	password, err := wave.SourcePassword(inst.Source)
	var absent []string
	if err == nil {
		ctx, cancel := context.WithTimeout(ic.cctx, 10*time.Second)
		absent, err = capture.AbsentTables(ctx, inst.Source, password.Reveal(), tables)
		cancel()
	}
	if err != nil {
		fmt.Fprintf(ic.out, "the tables were not looked up on the source (%v): one it does not have is skipped, and instance show lists it\n", err)
		return nil
	}
	if len(absent) > 0 {
		return fmt.Errorf("instance snapshot: %s: not on the source %s, or not visible to %s (a snapshot could not read it): nothing requested",
			strings.Join(absent, ", "), inst.Source.Addr, inst.Source.User)
	}
	return nil
}
