// Package durable makes directory entries survive a power loss. A file's fsync makes its
// content durable, not its name: a newly created (or renamed) file, or a new directory, is
// only on disk once the directory that holds the entry is fsynced too. Before that, a
// crash of the machine can lose the file while an offset committed after it survives.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SyncDir fsyncs the directory dir, making the entries created, renamed or removed in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// MkdirAll creates dir and its missing parents like os.MkdirAll, and makes each directory
// it created durable by syncing its parent with syncDir (SyncDir outside tests).
func MkdirAll(dir string, perm fs.FileMode, syncDir func(string) error) error {
	dir = filepath.Clean(dir)
	// The missing ones, deepest first.
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	// Parents first: a child's entry is only reachable once its parent's is durable.
	for i := len(missing) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
