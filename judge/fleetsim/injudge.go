package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/store/sqlite"
)

// inProcessJudge starts a judge in this process on a SQLite store in o.Dir (when empty,
// a temporary folder in memory where the system has one), served on 127.0.0.1 over real
// HTTP, whose clock, and its store's, is now. It returns the judge's base URL, a
// function that makes its historical refresh (it makes none on a timer: the simulator
// makes them at simulated instants, Options.HistoricalEvery) and a stop function that
// waits for it to end and removes what it created.
func inProcessJudge(ctx context.Context, o Options, now func() time.Time) (url string, refresh func(context.Context) error, stop func() error, err error) {
	dir, removeDir := o.Dir, func() error { return nil }
	if dir == "" {
		d, err := os.MkdirTemp(memTempDir(), "binlake-fleetsim-*")
		if err != nil {
			return "", nil, nil, fmt.Errorf("in-process judge: %w", err)
		}
		dir, removeDir = d, func() error { return os.RemoveAll(d) }
	}
	// The store's clock too: it keeps points it takes for future ones unpacked.
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(dir, "judge.db"), Now: now})
	if err != nil {
		removeDir()
		return "", nil, nil, fmt.Errorf("in-process judge: %w", err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ready := make(chan string, 1)
	jo := judge.Options{Store: st, Listen: "127.0.0.1:0", Now: now, Logger: logger,
		Token: o.Token,
		Ready: func(addr string) { ready <- addr }}
	if o.Judge != nil {
		o.Judge(&jo)
	}
	// What the simulation relies on stays the simulator's.
	jo.Store, jo.Listen, jo.Now, jo.Ready, jo.Subscriber = st, "127.0.0.1:0", now, func(addr string) { ready <- addr }, nil
	jo.HistoricalEvery = -1
	jo.TLS = config.HTTPTLS{}
	j, err := judge.New(jo)
	if err != nil {
		st.Close()
		removeDir()
		return "", nil, nil, fmt.Errorf("in-process judge: %w", err)
	}
	jctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- j.Run(jctx) }()
	stop = func() error {
		cancel()
		err := <-done
		return errors.Join(err, st.Close(), removeDir())
	}
	select {
	case addr := <-ready:
		return "http://" + addr, j.Historical().Refresh, stop, nil
	case err := <-done:
		done <- err
		return "", nil, nil, errors.Join(fmt.Errorf("in-process judge: %w", err), stop())
	case <-ctx.Done():
		return "", nil, nil, errors.Join(ctx.Err(), stop())
	}
}

// memTempDir is where the in-process judge's store goes by default: /dev/shm when it is
// a folder (Linux's tmpfs), so that the run measures plans rather than the disk (the
// store syncs every write, which on a busy shared disk slowed the large preset's history
// tenfold), else the system's temporary folder.
func memTempDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}
