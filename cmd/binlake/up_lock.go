//go:build !agentonly

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data folder %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid := strings.TrimSpace(string(b)); pid != "" {
				holder += " (pid " + pid + ")"
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is used by %s; stop that binlake or pass --data with another folder", ErrDataDirBusy, dir, holder)
		}
		return nil, fmt.Errorf("data folder %s: lock %s: %w", dir, path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
