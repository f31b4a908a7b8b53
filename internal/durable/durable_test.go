package durable

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recorder is a syncDir that records the directories and checks they exist.
func recorder(t *testing.T, synced *[]string) func(string) error {
	return func(dir string) error {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("synced %s, which does not exist: %v", dir, err)
		}
		*synced = append(*synced, dir)
		return SyncDir(dir)
	}
}

func TestMkdirAllSyncsTheParentOfEachNewDirectory(t *testing.T) {
	root := t.TempDir()
	var synced []string
	dir := filepath.Join(root, "a", "b", "c")
	if err := MkdirAll(dir, 0o755, recorder(t, &synced)); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("%s not created: %v", dir, err)
	}
	want := []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")}
	if !slices.Equal(synced, want) {
		t.Errorf("synced %q, want %q (parents first)", synced, want)
	}

	synced = nil
	if err := MkdirAll(dir, 0o755, recorder(t, &synced)); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Errorf("nothing created, yet synced %q", synced)
	}

	synced = nil
	if err := MkdirAll(filepath.Join(root, "a", "d"), 0o755, recorder(t, &synced)); err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(root, "a")}; !slices.Equal(synced, want) {
		t.Errorf("synced %q, want %q", synced, want)
	}
}

func TestMkdirAllFailsWhenASyncFails(t *testing.T) {
	root := t.TempDir()
	boom := errors.New("disk gone")
	err := MkdirAll(filepath.Join(root, "x"), 0o755, func(string) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the sync's", err)
	}
}

func TestMkdirAllUnderAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := MkdirAll(filepath.Join(f, "sub"), 0o755, func(string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("error %v, want one naming %s", err, f)
	}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	if err := SyncDir(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error %v, want one naming %s", err, missing)
	}
}
