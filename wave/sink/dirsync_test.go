package sink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirSyncs is a FileOptions.SyncDir that records each directory synced and whether the
// sink's file existed at the time, then syncs for real; fail makes the next call fail.
type dirSyncs struct {
	file     string
	dirs     []string
	fileSeen []bool
	fail     error
}

func (d *dirSyncs) sync(dir string) error {
	if err := d.fail; err != nil {
		d.fail = nil
		return err
	}
	_, err := os.Stat(d.file)
	d.dirs = append(d.dirs, dir)
	d.fileSeen = append(d.fileSeen, err == nil)
	return nil
}

// TestOpenFileSyncsItsDirectoryEntries: the directories created for the file and the
// file's own name are made durable (their parent directories fsynced, parents first, the
// file's directory once the file exists) before OpenFile returns, that is before the wave
// can commit an offset that counts on the file.
func TestOpenFileSyncsItsDirectoryEntries(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "out", "day", "rows.jsonl")
	ds := &dirSyncs{file: path}
	w, err := OpenFile(FileOptions{Path: path, SyncDir: ds.sync})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := []string{root, filepath.Join(root, "out"), filepath.Join(root, "out", "day")}
	if !slices.Equal(ds.dirs, want) {
		t.Fatalf("directories synced %q, want %q", ds.dirs, want)
	}
	if !ds.fileSeen[len(ds.fileSeen)-1] {
		t.Errorf("%s synced before the file was created", want[len(want)-1])
	}

	// An existing file: an earlier process may have crashed before its name was durable.
	ds.dirs, ds.fileSeen = nil, nil
	w.Close()
	w, err = OpenFile(FileOptions{Path: path, SyncDir: ds.sync})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if want := []string{filepath.Join(root, "out", "day")}; !slices.Equal(ds.dirs, want) {
		t.Errorf("reopening: directories synced %q, want %q", ds.dirs, want)
	}
}

// TestOpenFileFailsWhenItsDirectoryCannotBeSynced: no Writer (so no offset commit) when the
// file's name cannot be made durable.
func TestOpenFileFailsWhenItsDirectoryCannotBeSynced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	ds := &dirSyncs{file: path, fail: errors.New("injected directory fsync failure")}
	w, err := OpenFile(FileOptions{Path: path, SyncDir: ds.sync})
	if err == nil {
		w.Close()
		t.Fatal("OpenFile succeeded although the directory sync failed")
	}
	if !strings.Contains(err.Error(), "injected directory fsync failure") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q, want the sync's, naming %s", err, path)
	}
}

// TestFileSinkSyncsItsDirectoryOnReopen: after a failure the sink reopens the file, which
// creates it again if it was removed; its directory is synced again before the write, and
// a failure of that sync fails the Publish, which a retry then completes.
func TestFileSinkSyncsItsDirectoryOnReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	ds := &dirSyncs{file: path}
	ff := &faultyFile{}
	w, err := OpenFile(FileOptions{Path: path, SyncDir: ds.sync, Open: func(p string) (File, error) {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
		ff.File = f
		return ff, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	ff.failWrite = true
	if err := w.Publish(ctx, rows(0, 3)...); err == nil {
		t.Fatal("the injected write failure was not reported")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ds.dirs, ds.fileSeen = nil, nil
	ds.fail = errors.New("injected directory fsync failure")
	if err := w.Publish(ctx, rows(0, 3)...); err == nil || !strings.Contains(err.Error(), "injected directory fsync failure") {
		t.Fatalf("Publish after a failed directory sync: %v, want that failure", err)
	}
	if err := w.Publish(ctx, rows(0, 3)...); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Dir(path)}; !slices.Equal(ds.dirs, want) || !ds.fileSeen[0] {
		t.Errorf("directories synced on reopen %q (file there: %v), want %q after the file was created again", ds.dirs, ds.fileSeen, want)
	}
	if got := keys(t, path); !slices.Equal(got, seq(0, 3)) {
		t.Errorf("lines %q, want %q", got, seq(0, 3))
	}
}
