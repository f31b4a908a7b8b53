package single_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
)

// TestPutSyncsTheDirectoryAfterTheRename: a Put returns only once the directory holding the
// file is synced after the rename that replaced it (until then a power loss may bring the
// old file back: a committed offset would go back in time), and a failed sync fails the Put.
// The directories New creates are made durable too.
func TestPutSyncsTheDirectoryAfterTheRename(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "var", "coord.json")
	var synced []string
	var failNext error
	var valueThen []string // the value on disk when each sync ran
	c, err := single.New(single.Options{Path: p, SyncDir: func(dir string) error {
		synced = append(synced, dir)
		var st struct {
			Values map[string]struct{ Data []byte }
		}
		if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &st) == nil {
			valueThen = append(valueThen, string(st.Values["k"].Data))
		} else {
			valueThen = append(valueThen, "")
		}
		err := failNext
		failNext = nil
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if want := []string{root}; !slices.Equal(synced, want) {
		t.Fatalf("New synced %q, want %q (the parent of the directory it created)", synced, want)
	}
	ctx := context.Background()
	synced, valueThen = nil, nil
	v, err := c.Put(ctx, "k", []byte("one"), coord.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Dir(p)}; !slices.Equal(synced, want) || valueThen[0] != "one" {
		t.Fatalf("Put synced %q with the file holding %q, want %q after the rename", synced, valueThen, want)
	}
	failNext = errors.New("injected directory fsync failure")
	if _, err := c.Put(ctx, "k", []byte("two"), v); err == nil || !strings.Contains(err.Error(), "injected directory fsync failure") {
		t.Fatalf("Put with a failing directory sync: %v, want that failure", err)
	}
	// As any failed Put: memory keeps the old value, and the next Put goes from it.
	if got, err := c.Get(ctx, "k"); err != nil || string(got.Data) != "one" || got.Version != v {
		t.Fatalf("after the failed Put: %q version %d (%v), want %q version %d", got.Data, got.Version, err, "one", v)
	}
	if _, err := c.Put(ctx, "k", []byte("three"), v); err != nil {
		t.Fatal(err)
	}
}
