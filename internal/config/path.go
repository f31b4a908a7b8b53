package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CheckFilePath checks path, a file a role creates or opens as it starts (the wave's row
// file): not a folder, and its folder there or one that can be created, i.e. the nearest
// part of the path that exists is a folder; and, as the user the check runs as (the
// documented `sudo -u binlake binlake <role> --check`), that the file can be read and
// written, or, not there yet, that its nearest existing folder can be written to make
// it. Permissions were left to the start, and `--check` passed a path in a folder the
// role's user cannot write that the start then refused (an outside trial).
func CheckFilePath(path string) error {
	return checkPath(path, false)
}

// CheckStorePath is CheckFilePath for a file kept with files of its own beside it
// (SQLite's -wal and -shm, a lock file): its folder must be writable too, even when the
// file is there already.
func CheckStorePath(path string) error {
	return checkPath(path, true)
}

func checkPath(path string, beside bool) error {
	if path == "" {
		return errors.New("empty: want a file path")
	}
	err := checkPathIn(path, beside)
	if err != nil && !filepath.IsAbs(path) {
		// ./data/judge.db checked from the operator's folder is another file than the
		// unit's (an outside trial: the documented check failed where the start would not).
		wd, _ := os.Getwd()
		err = fmt.Errorf("%w (a relative path is from the working directory, %s here; the systemd units run in /var/lib/binlake/<role>: check from there, or give an absolute path)", err, wd)
	}
	return err
}

func checkPathIn(path string, beside bool) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a folder: want a file path", path)
		}
		if err := unix.Access(path, unix.R_OK|unix.W_OK); err != nil {
			return fmt.Errorf("%s: %s cannot read and write it: %w", path, whoAmI(), err)
		}
		if beside {
			return writableFolder(path, filepath.Dir(path), "to keep its companion files")
		}
		return nil
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s: %s is a file, so no folder can be made there", path, dir)
		case err == nil:
			return writableFolder(path, dir, "to make it")
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s: %w", path, err)
		}
		if parent := filepath.Dir(dir); parent == dir {
			return nil
		}
	}
}

// writableFolder refuses dir, the folder path needs for why, when this user cannot
// write into it.
func writableFolder(path, dir, why string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("%s: %s cannot write into %s %s: %w", path, whoAmI(), dir, why, err)
	}
	return nil
}

// whoAmI names the user the process runs as, for the messages: the check's verdict is
// that user's.
func whoAmI() string {
	if u, err := user.Current(); err == nil {
		return "user " + u.Username
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}
