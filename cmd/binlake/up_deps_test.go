//go:build !agentonly

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/coord/single"
)

// A damaged file in the data folder is an error naming it, not a panic: up once lost the
// error and closed a nil suiteDeps.
func TestRunNamesADamagedDataFile(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"coordinator", CoordFile, "is not a coordinator file"},
		{"store", StoreFile, "file is not a database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte("garbage\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := runSuite(context.Background(), upOptions{DataDir: dir, Node: "n",
				JudgeListen: "127.0.0.1:0", AlarmListen: "127.0.0.1:0", Logger: quietLogger()})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, want an error naming %s and %q", err, path, tt.want)
			}
			// What opened before the damaged file was closed: the coordinator's lock is free.
			if tt.file != CoordFile {
				c, err := single.New(single.Options{Path: filepath.Join(dir, CoordFile)})
				if err != nil {
					t.Fatalf("the coordinator after a failed Run: %v", err)
				}
				c.Close()
			}
		})
	}
}
