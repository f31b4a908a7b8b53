//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/sink"
)

// waveSetup is the wave of `up`: its options before the parts it talks to are known.
type waveSetup struct{ opts wave.Options }

// newWave defines the capture instance for the source in the coordinator (keeping its
// offset when the definition is unchanged) and opens the rows sink.
func (o *upOptions) newWave(ctx context.Context, c coord.Coordinator, dir string) (*waveSetup, string, func(), error) {
	m := *o.MySQL
	if m.Flavor == "" {
		// The data folder's instance of the same server says it: a restart while the
		// source refuses the login (a password changed) starts and retries, as the
		// wave does, where asking the server stopped up at its start (an outside trial).
		if stored, err := cluster.GetInstance(ctx, c, InstanceID); err == nil && stored != nil && stored.Source.Addr == m.Addr && stored.Source.Flavor != "" {
			m.Flavor = stored.Source.Flavor
		}
	}
	if m.Flavor == "" {
		f, err := detectFlavor(ctx, m)
		if err != nil {
			return nil, "", nil, err
		}
		m.Flavor = f
	}
	inst := m.instance(dir)
	// A server_id new to the instance is checked against the source's own and its
	// replicas', as instance add checks it: a clash ended a real replica's connection
	// for as long as up ran.
	pw := m.Password
	check := func(ctx context.Context, inst *cluster.Instance, reading bool) error {
		warnings, err := wave.CheckSource(ctx, inst, func(cluster.Source) (config.Secret, error) { return pw, nil }, reading)
		switch {
		case errors.Is(err, wave.ErrSourceNotRead):
			return nil // the wave says why it cannot read the source, and retries
		case errors.Is(err, wave.ErrFlavorMismatch):
			return fmt.Errorf("mysql: %w (-mysql-flavor names it, or leave it out: up asks the server)", err)
		case err != nil:
			return fmt.Errorf("mysql: %w (-mysql-server-id sets another)", err)
		}
		for _, w := range warnings {
			o.Logger.Warn("source check: "+w, "component", "up", "instance", inst.ID)
		}
		return nil
	}
	if err := defineInstance(ctx, c, inst, o.Node, check, o.Logger); err != nil {
		return nil, "", nil, err
	}
	var pub bus.Publisher
	rows := o.Rows
	var closeRows func()
	switch rows {
	case "-":
		s := sink.New(o.Stdout)
		pub, closeRows, rows = s, func() { s.Close() }, "stdout"
	default:
		if rows == "" {
			rows = filepath.Join(dir, RowsFile)
		}
		s, err := sink.OpenFile(sink.FileOptions{Path: rows})
		if err != nil {
			return nil, "", nil, err
		}
		pub, closeRows = s, func() { s.Close() }
	}
	return &waveSetup{opts: wave.Options{
		Node: o.Node, HTTPAddr: o.WaveListen, Coord: c, Publisher: pub, Logger: o.Logger,
		Password: func(cluster.Source) (config.Secret, error) { return pw, nil },
	}}, rows, closeRows, nil
}

// defineInstance stores the instance unless the same definition is there already. One
// of another server (address or flavor) replaces it, and capture starts again at that
// server's current position; a changed user, server_id or subscriptions redefine it in
// place (cluster.Redefine), so capture goes on from the committed offset. Its
// on_unreadable and on_too_large are the stored ones (binlake instance set).
func defineInstance(ctx context.Context, c coord.Coordinator, inst *cluster.Instance, node string,
	checkSource func(ctx context.Context, inst *cluster.Instance, reading bool) error, logger *slog.Logger) error {
	if err := inst.Validate(); err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	check := func() error {
		if checkSource == nil {
			return nil
		}
		return checkSource(ctx, inst, false)
	}
	cur, err := c.Get(ctx, cluster.InstanceKey(inst.ID))
	switch {
	case errors.Is(err, coord.ErrNotFound):
		if err := check(); err != nil {
			return err
		}
		_, err = cluster.AddInstance(ctx, c, inst, node, nil)
		return err
	case err != nil:
		return fmt.Errorf("read instance %s: %w", inst.ID, err)
	}
	stored, perr := cluster.ParseInstance(cur.Data)
	if perr != nil || !cluster.SameSource(ctx, stored.Source.Addr, inst.Source.Addr) || stored.Source.Flavor != inst.Source.Flavor {
		// No definition (a removal cut short) or another server: its offset means nothing.
		if err := check(); err != nil {
			return err
		}
		was := "no definition"
		if perr == nil {
			was = stored.Source.Addr + " (" + stored.Source.Flavor + ")"
		}
		logger.Warn("the source changed: capture starts again at the new source's current position; rows written since the last run are not read",
			"component", "up", "instance", inst.ID, "was", was, "now", inst.Source.Addr+" ("+inst.Source.Flavor+")")
		if err := cluster.RemoveInstance(ctx, c, inst.ID); err != nil {
			return err
		}
		_, err = cluster.AddInstance(ctx, c, inst, node, nil)
		return err
	}
	if stored.Source.ServerID != inst.Source.ServerID {
		// The stored one may still be registered by the last run's connection: only a new
		// id is checked.
		if err := check(); err != nil {
			return err
		}
	}
	if stored.Source.Addr != inst.Source.Addr {
		logger.Info("the source is the server stored under another address: kept as stored, capture goes on from the committed offset",
			"component", "up", "instance", inst.ID, "given", inst.Source.Addr, "stored", stored.Source.Addr)
	}
	// What binlake instance set changed stays: up's flags do not say it.
	inst.OnUnreadable, inst.OnTooLarge = stored.OnUnreadable, stored.OnTooLarge
	changed, err := cluster.Redefine(ctx, c, inst)
	if err != nil {
		return err
	}
	if changed && checkSource != nil && stored.Source.ServerID == inst.Source.ServerID {
		// Read as the instance reads it (no trial dump under its server_id, which the last
		// run's connection may hold): its warnings (a subscription that takes no table)
		// were said for a new data folder only (an outside trial).
		if err := checkSource(ctx, inst, true); err != nil {
			return err
		}
	}
	if changed {
		logger.Info("the user, server_id or subscriptions changed: the instance is redefined in place and capture goes on from the committed offset "+
			"(a table newly subscribed from there on; its existing rows: binlake instance snapshot "+inst.ID+" -data DIR, with up stopped)",
			"component", "up", "instance", inst.ID)
		if inst.Snapshot != nil && stored.Snapshot == nil {
			logger.Warn("-mysql-snapshot acts at the first start on a data folder only: binlake instance snapshot emits the tables' rows now",
				"component", "up", "instance", inst.ID)
		}
	}
	_, err = cluster.MoveInstance(ctx, c, inst.ID, node, nil)
	if errors.Is(err, cluster.ErrAlreadyThere) {
		return nil // up's usual start: the instance is on this node already
	}
	return err
}

// detectFlavor asks the server whether it is MariaDB.
func detectFlavor(ctx context.Context, m MySQL) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	version, err := capture.SourceVersion(cctx, cluster.Source{Addr: m.Addr, User: m.User, TLS: m.TLS}, m.Password.Reveal())
	if err != nil {
		err = capture.ServerError(err)
		var me *mysql.MyError
		// Each stopped up with the bare error (outside trials): say why up asked, and
		// what fixes it: the credentials for a refused login (or a start all the same,
		// retrying while the grant is fixed), the server for one that does not answer.
		if errors.As(err, &me) && me.Code == mysql.ER_ACCESS_DENIED_ERROR {
			return "", fmt.Errorf("mysql %s: %w (up asks the server whether it is MySQL or MariaDB, and it refused the login: check the user and its password, in the DSN or $%s; with -mysql-flavor mysql or mariadb up starts all the same and retries the login, as on a folder that knows its flavor)",
				m, err, MySQLPasswordEnv)
		}
		if me == nil && !capture.Hinted(err) {
			return "", fmt.Errorf("mysql %s: %w (up asks the server whether it is MySQL or MariaDB: is it running, and reachable from here? With -mysql-flavor mysql or mariadb up starts all the same and retries until it answers)",
				m, err)
		}
		return "", fmt.Errorf("mysql %s: %w", m, err)
	}
	return capture.FlavorOf(version), nil
}
