// Package flock holds a file's exclusive lock for as long as a process runs, to keep a
// second process off what one process owns (a data folder, a coordinator file, a store
// file). The kernel drops the lock when its process dies, so a crash never leaves it
// held; the holder's pid is written in the file, for the message of the one refused.
package flock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrBusy is Take's error when another process holds the lock.
var ErrBusy = errors.New("locked by another process")

// Busy is Take's error when another process holds the lock: Holder names it ("another
// process (pid 42)", or without the pid when the file does not say).
type Busy struct{ Path, Holder string }

func (e *Busy) Error() string { return e.Path + " is locked by " + e.Holder }
func (e *Busy) Unwrap() error { return ErrBusy }

// Take locks path (created when missing) without waiting and writes this process's pid
// into it; closing the file returns the lock. Another holder is a *Busy.
func Take(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid := strings.TrimSpace(string(b)); pid != "" {
					holder += " (pid " + pid + ")"
				}
			}
			return nil, &Busy{Path: path, Holder: holder}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
