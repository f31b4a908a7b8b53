//go:build !agentonly

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/binlake/binlake/internal/flock"
)

// ErrDataDirBusy is returned when another process runs on the same data folder.
var ErrDataDirBusy = errors.New("data folder in use")

// lockName is the file in the data folder that one `binlake up` holds with flock while it
// runs. The store and the coordinator file would be corrupted or split between two
// processes; the coordinator locks its own file too, but this lock comes first and
// names the problem in the terms of `up`.
const lockName = "binlake-up.lock"

// lockDataDir takes the folder's lock without waiting. The kernel drops a flock when
// its process dies, so a crashed run never leaves the folder locked.
func lockDataDir(dir string) (*os.File, error) {
	f, err := flock.Take(filepath.Join(dir, lockName))
	var busy *flock.Busy
	switch {
	case errors.As(err, &busy):
		return nil, fmt.Errorf("%w: %s is used by %s; stop that binlake or pass --data with another folder", ErrDataDirBusy, dir, busy.Holder)
	case err != nil:
		return nil, fmt.Errorf("data folder %s: %w", dir, err)
	}
	return f, nil
}
