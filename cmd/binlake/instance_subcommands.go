//go:build !agentonly

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// The subcommands of binlake instance, each on an open coordinator (instanceCmd).

func (ic *instanceCmd) add() error {
	f := ic.f
	if *f.file == "" {
		return errors.New("instance add: -f instance.yaml is required")
	}
	inst, err := loadInstanceFile(*f.file)
	if err != nil {
		return err
	}
	// What would refuse the add (an id that exists, another instance with the source's
	// server_id) refuses it before the source is measured or read: AddInstance checks it
	// again, against what changed meanwhile.
	if err := cluster.CheckAdd(ic.cctx, ic.c, &inst); err != nil {
		return err
	}
	if err := requireLiveNode(ic.cctx, ic.c, ic.sub, *f.node, *f.force); err != nil {
		return err
	}
	startSays := inst.Start == nil // ResolveStart reads the source and says why it could not
	read, _, err := checkSourceFromHere(ic.cctx, &inst, startSays, false, ic.out)
	if err != nil {
		return fmt.Errorf("instance add: %w", err)
	}
	if ic.jp != nil && *f.node == "" && *f.measure > 0 {
		ic.jp.expected = measureSource(ic.cctx, inst.Source, *f.measure, ic.out)
	}
	// Where the first capture begins is fixed now, not when a wave first connects.
	start := wave.ResolveStart(ic.cctx, &inst, wave.SourcePassword, time.Now())
	n, err := cluster.AddInstance(ic.cctx, ic.c, &inst, *f.node, ic.placer)
	if err != nil {
		return ic.noLiveWave(err, inst.ID)
	}
	fmt.Fprintf(ic.out, "instance %s added, assigned to %s\n", inst.ID, n)
	sayHowChosen(ic.cctx, ic.out, ic.c, n, *f.node != "", ic.jp, *f.judgeURL, ic.judgeFrom, *f.cfgPath)
	if startSays && !read {
		start += "; the source's settings, privileges and server_id were not checked from here either"
	}
	if start != "" {
		fmt.Fprintln(ic.out, start)
	}
	return nil
}

func (ic *instanceCmd) list() error {
	ids, err := cluster.ListInstances(ic.cctx, ic.c)
	if err != nil {
		return err
	}
	var infos []*cluster.InstanceInfo
	for _, id := range ids {
		info, err := cluster.ShowInstance(ic.cctx, ic.c, id, 0, time.Now)
		if errors.Is(err, coord.ErrNotFound) {
			continue // removed since the listing, or a bare node a removal's straggler left
		}
		if err != nil {
			return err
		}
		info.Instance = nil
		infos = append(infos, info)
	}
	if *ic.f.asJSON {
		return json.NewEncoder(ic.out).Encode(infos)
	}
	if len(infos) == 0 {
		// An empty table said nothing of where it looked (a mistyped -root).
		fmt.Fprintf(ic.out, "no instance in %s (binlake instance add defines one)\n", ic.coordDesc)
		return nil
	}
	tw := tabwriter.NewWriter(ic.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tASSIGN\tLEADER\tSTATE\tSINCE\tPOSITION")
	now := time.Now()
	for _, i := range infos {
		pos := "-"
		if i.Position != nil {
			pos = i.Position.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", i.ID, dash(i.Assign), dash(i.Leader), stateText(i), sinceText(i, now), pos)
	}
	return tw.Flush()
}

func (ic *instanceCmd) show() error {
	if err := ic.needID(); err != nil {
		return err
	}
	sample := *ic.f.sample
	sctx, scancel := context.WithTimeout(ic.ctx, 30*time.Second+sample)
	defer scancel()
	info, err := cluster.ShowInstance(sctx, ic.c, ic.id, sample, time.Now)
	if err != nil {
		return err
	}
	out := ic.out
	if *ic.f.asJSON {
		return json.NewEncoder(out).Encode(info)
	}
	fmt.Fprintf(out, "instance  %s\nassign    %s\nleader    %s\nstate     %s\n", info.ID, dash(info.Assign), dash(info.Leader), stateLine(info, time.Now()))
	if info.Error != "" {
		fmt.Fprintf(out, "error     %s\n", info.Error)
	}
	if info.Position != nil {
		fmt.Fprintf(out, "position  %s\n", info.Position)
	}
	if p := info.Position; p != nil && p.Snapshot != nil {
		sp := p.Snapshot
		state := fmt.Sprintf("reading %s (%d tables left)", strings.Join(sp.Tables[:min(1, len(sp.Tables))], ""), len(sp.Tables))
		if sp.Done {
			state = "done"
		}
		if len(sp.Skipped) > 0 {
			// A table it could not read is no row, not a success: "done, 0 rows" alone read as
			// one for a table that is not there.
			state += fmt.Sprintf(" (%d skipped, below)", len(sp.Skipped))
		}
		fmt.Fprintf(out, "snapshot  %s: %s, %d rows, started %s\n", sp.Request, state, sp.Rows, sp.StartedAt)
		for _, s := range sp.Skipped {
			fmt.Fprintf(out, "skipped   %s\n", s)
		}
	}
	if info.LagS != nil { // wave.Lag: caught up, or how far behind
		lag := fmt.Sprintf("%.0f s behind the source", *info.LagS)
		if info.CaughtUp {
			lag = "0 s (caught up: the source's heartbeat shows nothing newer)"
		}
		fmt.Fprintf(out, "lag       %s\n", lag)
	}
	if info.RowsPerS != nil {
		fmt.Fprintf(out, "rows/s    %.1f\n", *info.RowsPerS)
	}
	if info.Instance != nil {
		src := info.Instance.Source
		fmt.Fprintf(out, "source    %s@%s (%s, server id %d%s)\n", src.User, src.Addr, src.Flavor, src.ServerID, tlsNote(src.TLS))
		for _, s := range info.Instance.Subscriptions {
			format := s.Format
			if format == "" {
				format = rowenc.FormatJSON
			}
			fmt.Fprintf(out, "sub       %s → %s include=%v exclude=%v events=%v format=%s", s.Name, s.Topic, s.Include, s.Exclude, s.Events, format)
			if len(s.FormatOptions) > 0 {
				fmt.Fprintf(out, " %v", s.FormatOptions) // fmt sorts a map's keys
			}
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "handling  %s\n", handlingText(info.Instance))
	}
	return nil
}

// handlingText says what instance show's text leaves to -json otherwise: what the
// instance does with a change it cannot publish, and its snapshot and pinned options.
func handlingText(inst *cluster.Instance) string {
	h := fmt.Sprintf("on_unreadable %s, on_too_large %s", cmp.Or(inst.OnUnreadable, cluster.UnreadableStop), cmp.Or(inst.OnTooLarge, cluster.UnreadableStop))
	if inst.Snapshot != nil && inst.Snapshot.Initial {
		h += ", snapshot at the first start"
	}
	if inst.Pinned {
		h += ", pinned to its wave"
	}
	return h
}

func (ic *instanceCmd) remove() error {
	if err := ic.needID(); err != nil {
		return err
	}
	// The removal waits for the instance's leader to let go (cluster.RemoveWait), which the
	// coordinator's 30 s bound on the other subcommands would cut short.
	rctx, cancel := context.WithTimeout(ic.ctx, cluster.RemoveWait+30*time.Second)
	defer cancel()
	if err := cluster.RemoveInstance(rctx, ic.c, ic.id); err != nil {
		return err
	}
	fmt.Fprintf(ic.out, "instance %s removed, with its offset and status\n", ic.id)
	return nil
}

func (ic *instanceCmd) move() error {
	if err := ic.needID(); err != nil {
		return err
	}
	f := ic.f
	if err := requireLiveNode(ic.cctx, ic.c, ic.sub, *f.node, *f.force); err != nil {
		return err
	}
	n, err := cluster.MoveInstance(ic.cctx, ic.c, ic.id, *f.node, ic.placer)
	if errors.Is(err, cluster.ErrAlreadyThere) {
		fmt.Fprintf(ic.out, "instance %s is assigned to %s already: nothing moved\n", ic.id, n)
		return nil
	}
	if err != nil {
		return ic.noLiveWave(err, ic.id)
	}
	fmt.Fprintf(ic.out, "instance %s assigned to %s\n", ic.id, n)
	sayHowChosen(ic.cctx, ic.out, ic.c, n, *f.node != "", ic.jp, *f.judgeURL, ic.judgeFrom, *f.cfgPath)
	return nil
}

func (ic *instanceCmd) set() error {
	if err := ic.needID(); err != nil {
		return err
	}
	h := cluster.Handling{OnUnreadable: *ic.f.onUnreadable, OnTooLarge: *ic.f.onTooLarge}
	var changed bool
	var err error
	switch {
	case *ic.f.file != "" && h != (cluster.Handling{}):
		return errors.New("instance set: give -f or the -on-… flags, not both (the file says on_unreadable and on_too_large too)")
	case *ic.f.file != "":
		if changed, err = ic.redefine(); err != nil {
			return err
		}
	case h == (cluster.Handling{}):
		return errors.New("instance set: give -f instance.yaml (the whole definition) or -on-unreadable or -on-too-large (stop or skip)")
	default:
		if changed, err = cluster.SetHandling(ic.cctx, ic.c, ic.id, h); err != nil {
			return err
		}
	}
	if !changed {
		fmt.Fprintf(ic.out, "instance %s has these already: nothing changed\n", ic.id)
		return nil
	}
	from := "the committed offset"
	if _, _, committed, err := cluster.ReadOffset(ic.cctx, ic.c, ic.id); err == nil && !committed {
		from = "its start (nothing is committed yet)"
	}
	if ic.upData {
		// up is stopped: its wave takes the change when up starts again.
		fmt.Fprintf(ic.out, "instance %s changed; binlake up on %s starts it from %s\n", ic.id, *ic.f.dataDir, from)
		return nil
	}
	fmt.Fprintf(ic.out, "instance %s changed; its wave starts it again from %s (binlake instance show %s)\n", ic.id, from, ic.id)
	return nil
}

// redefine is set -f: the file's definition replaces the stored one in place
// (cluster.Redefine), once the source is read from here as add reads it (a new server_id
// taken at the source refuses).
func (ic *instanceCmd) redefine() (bool, error) {
	def, err := loadInstanceFile(*ic.f.file)
	if err != nil {
		return false, err
	}
	if def.ID != ic.id {
		return false, fmt.Errorf("instance set %s: %s defines instance %q", ic.id, *ic.f.file, def.ID)
	}
	stored, err := cluster.GetInstance(ic.cctx, ic.c, ic.id)
	if err != nil {
		return false, err
	}
	// Its wave reads the source under the stored server_id: that connection is no clash.
	reading := stored.Source.ServerID == def.Source.ServerID
	if _, _, err := checkSourceFromHere(ic.cctx, &def, false, reading, ic.out); err != nil {
		return false, fmt.Errorf("instance set: %w", err)
	}
	changed, err := cluster.Redefine(ic.cctx, ic.c, &def)
	if err == nil && def.Source.Addr != stored.Source.Addr {
		// Redefine keeps the stored address for one reaching the same server.
		fmt.Fprintf(ic.out, "source.addr %s is kept as stored, %s (the same server)\n", def.Source.Addr, stored.Source.Addr)
	}
	if changed {
		fmt.Fprintf(ic.out, "changing %s\n", strings.Join(redefined(stored, &def), ", "))
		if _, widened := subscriptionChanges(stored.Subscriptions, def.Subscriptions); widened {
			fmt.Fprintf(ic.out, "a table newly subscribed comes from the committed offset on; its existing rows: binlake instance snapshot %s -tables db.table\n", ic.id)
		}
	}
	return changed, err
}

// redefined names what a redefinition changes, a handling with its values (a file that
// leaves on_unreadable out sets it back to stop).
func redefined(cur, def *cluster.Instance) []string {
	var what []string
	add := func(changed bool, name string) {
		if changed {
			what = append(what, name)
		}
	}
	subs, _ := subscriptionChanges(cur.Subscriptions, def.Subscriptions)
	add(subs != "", subs)
	add(cur.Source.User != def.Source.User, "source.user")
	add(cur.Source.PasswordEnv != def.Source.PasswordEnv || cur.Source.PasswordFile != def.Source.PasswordFile, "the source's password reference")
	add(cur.Source.ServerID != def.Source.ServerID, fmt.Sprintf("source.server_id %d → %d", cur.Source.ServerID, def.Source.ServerID))
	add(cur.Source.Flavor != def.Source.Flavor, fmt.Sprintf("source.flavor %s → %s", cur.Source.Flavor, def.Source.Flavor))
	handling := func(v string) string { return cmp.Or(v, cluster.UnreadableStop) }
	add(handling(cur.OnUnreadable) != handling(def.OnUnreadable), fmt.Sprintf("on_unreadable %s → %s", handling(cur.OnUnreadable), handling(def.OnUnreadable)))
	add(handling(cur.OnTooLarge) != handling(def.OnTooLarge), fmt.Sprintf("on_too_large %s → %s", handling(cur.OnTooLarge), handling(def.OnTooLarge)))
	add(!reflect.DeepEqual(cur.Snapshot, def.Snapshot), "snapshot")
	add(cur.Pinned != def.Pinned, fmt.Sprintf("pinned %v → %v", cur.Pinned, def.Pinned))
	if len(what) == 0 {
		what = append(what, "how the definition is written")
	}
	return what
}

// subscriptionChanges says which subscriptions a redefinition adds, removes and changes
// ("" when none), and whether it may take in tables not read before (one added, or one
// whose include or events changed): their existing rows are a snapshot's.
func subscriptionChanges(cur, def []cluster.Subscription) (string, bool) {
	was := map[string]cluster.Subscription{}
	for _, s := range cur {
		was[s.Name] = s
	}
	var added, changed, removed []string
	widened := false
	for _, s := range def {
		old, ok := was[s.Name]
		delete(was, s.Name)
		switch {
		case !ok:
			added, widened = append(added, s.Name), true
		case !reflect.DeepEqual(old, s):
			changed = append(changed, s.Name)
			widened = widened || !slices.Equal(old.Include, s.Include) || !slices.Equal(old.Events, s.Events)
		}
	}
	for _, s := range cur {
		if _, gone := was[s.Name]; gone {
			removed = append(removed, s.Name)
		}
	}
	var parts []string
	for _, p := range []struct {
		verb  string
		names []string
	}{{"added", added}, {"changed", changed}, {"removed", removed}} {
		if len(p.names) > 0 {
			parts = append(parts, p.verb+" "+strings.Join(p.names, " "))
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return "subscriptions (" + strings.Join(parts, "; ") + ")", widened
}

func (ic *instanceCmd) snapshot() error {
	if err := ic.needID(); err != nil {
		return err
	}
	var names []string
	if *ic.f.tables != "" {
		names = strings.Split(*ic.f.tables, ",")
		if err := ic.checkTablesOnSource(names); err != nil {
			return err
		}
	}
	req, err := cluster.RequestSnapshot(ic.cctx, ic.c, ic.id, names)
	if err != nil {
		return err
	}
	what := "every subscribed table"
	if len(names) > 0 {
		what = strings.Join(names, ", ")
	}
	fmt.Fprintf(ic.out, "snapshot %s of instance %s requested: %s; %s (progress: binlake instance show %s)\n", req.ID, ic.id, what, ic.whenSnapshotStarts(len(names) > 0), ic.id)
	return nil
}

// whenSnapshotStarts says when a requested snapshot starts: at once where a wave runs the
// instance, else once one does (the request waits in the coordinator). An instance
// stopped on a purged binlog is restarted by it at the source's end (wave.awaitResnapshot);
// one stopped on another error is not. named: the request names its tables.
func (ic *instanceCmd) whenSnapshotStarts(named bool) string {
	if info, err := cluster.ShowInstance(ic.cctx, ic.c, ic.id, 0, time.Now); err == nil && info.State == cluster.StateError && !info.LastKnown {
		if info.Reason == wave.ReasonBinlogPurged {
			s := "the instance is stopped on a purged binlog: its leader restarts it at the source's current end with this snapshot, within seconds; " +
				"a row changed in the purged binlog comes as its current state, one deleted there does not come"
			if named {
				s += ", and the tables not named keep the purged binlog's changes lost"
			}
			return s
		}
		return fmt.Sprintf("the instance is stopped (%s), which a snapshot does not mend: the snapshot starts once it runs again (binlake instance show %s says what stopped it)",
			dash(info.Reason), ic.id)
	}
	// A failed read of the waves only costs the exact wording: the request is written.
	if live, err := cluster.LiveWaves(ic.cctx, ic.c); err == nil && len(live) == 0 {
		if ic.upData {
			return "no wave is live while up is stopped: the request is recorded, and the snapshot starts when a wave runs the instance, up's at its next start with --mysql"
		}
		return "no wave is live: the request is recorded, and the snapshot starts when a wave runs the instance"
	}
	return "its leader starts it at its next poll and source heartbeat, within seconds"
}

func (ic *instanceCmd) rebalance() error {
	f := ic.f
	if *f.apply {
		// The run is followed for -wait, beyond the coordinator operations' bound.
		return rebalanceInstances(ic.ctx, ic.c, ic.planner, true, *f.asJSON, *f.wait, ic.out)
	}
	if ic.planner == nil {
		return ic.noJudge()
	}
	return rebalanceInstances(ic.cctx, ic.c, ic.planner, false, *f.asJSON, *f.wait, ic.out)
}

// tlsNote is how instance show says the source's TLS: nothing for plain TCP.
func tlsNote(t *config.ClientTLS) string {
	switch {
	case t == nil:
		return ""
	case t.InsecureSkipVerify:
		return ", TLS without verifying the certificate"
	case t.CAFile != "":
		return ", TLS with the CA " + t.CAFile
	}
	return ", TLS with the system's CAs"
}
