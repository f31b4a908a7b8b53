//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"log/slog"
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

// Up without -mysql on a folder that holds capture instances says that no wave runs them.
func TestUpSaysWhatItDoesNotCapture(t *testing.T) {
	d, err := openSuiteDeps(context.Background(), t.TempDir(), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	d.sayUncaptured(context.Background(), log)
	d.close()
	if logs.Len() != 0 {
		t.Fatalf("no instance, yet: %s", logs.String())
	}
	dir, c := upFolder(t)
	c.Close()
	if d, err = openSuiteDeps(context.Background(), dir, quietLogger()); err != nil {
		t.Fatal(err)
	}
	defer d.close()
	d.sayUncaptured(context.Background(), log)
	if s := logs.String(); !strings.Contains(s, "no wave runs without -mysql") || !strings.Contains(s, "ids="+InstanceID) {
		t.Fatalf("log: %s", s)
	}
}

// up's node is the wave's and its agent's: one the wave refuses is refused at once.
func TestUpRefusesANodeTheWaveWould(t *testing.T) {
	err := runSuite(context.Background(), upOptions{DataDir: t.TempDir(), Node: "a b/c",
		JudgeListen: "127.0.0.1:0", AlarmListen: "127.0.0.1:0", Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), `--node "a b/c": want 1-128 letters`) {
		t.Fatalf("Run: %v", err)
	}
}
