package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckFilePath checks path, a file a role creates or opens as it starts (the judge's
// SQLite store, the single coordinator's file, the wave's row file): not a folder, and
// its folder there or one that can be created, i.e. the nearest part of the path that
// exists is a folder. Permissions are left to the start, since they depend on the user
// the role runs as.
func CheckFilePath(path string) error {
	if path == "" {
		return errors.New("empty: want a file path")
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a folder: want a file path", path)
		}
		return nil
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s: %s is a file, so no folder can be made there", path, dir)
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s: %w", path, err)
		}
		if parent := filepath.Dir(dir); parent == dir {
			return nil
		}
	}
}
