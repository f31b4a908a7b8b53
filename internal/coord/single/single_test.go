package single_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/coordtest"
	"github.com/binlake/binlake/internal/coord/single"
)

func TestConformance(t *testing.T) {
	// Every coordinator a test opens uses that test's file, so a reopened one sees the
	// values of the previous one.
	var mu sync.Mutex
	paths := map[string]string{}
	coordtest.Run(t, func(t *testing.T) coord.Coordinator {
		mu.Lock()
		p, ok := paths[t.Name()]
		if !ok {
			p = filepath.Join(t.TempDir(), "coord.json")
			paths[t.Name()] = p
		}
		mu.Unlock()
		c, err := single.New(single.Options{Path: p})
		if err != nil {
			t.Fatalf("single.New: %v", err)
		}
		return c
	})
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"empty path", "", "path is empty"},
		{"not json", write("garbage.json", "not json"), "is not a coordinator file"},
		{"truncated", write("trunc.json", `{"format":1,"values":{"a":`), "is not a coordinator file"},
		{"future format", write("future.json", `{"format":99,"values":{}}`), "has format 99"},
		{"bad key in file", write("badkey.json", `{"format":1,"values":{"/abs":{"data":"","version":0}}}`), "invalid key"},
		{"negative version", write("negver.json", `{"format":1,"values":{"a":{"data":"","version":-5}}}`), "negative version"},
		{"negative token", write("negtok.json", `{"format":1,"token":-1,"values":{}}`), "negative token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := single.New(single.Options{Path: tc.path})
			if err == nil {
				_ = c.Close()
				t.Fatalf("New(%q) succeeded", tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%q) error %q, want it to mention %q", tc.path, err, tc.want)
			}
		})
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "coord.json")
	c, err := single.New(single.Options{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	_, err = single.New(single.Options{Path: p})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second New on a locked file: %v, want a lock error", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("lock error %q does not name the holder's pid %d", err, os.Getpid())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Close releases the lock.
	c2, err := single.New(single.Options{Path: p})
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	_ = c2.Close()
}

// TestLockAcrossProcesses opens the file in a child process (this test binary, re-run
// as a helper) while this process holds it.
func TestLockAcrossProcesses(t *testing.T) {
	if p := os.Getenv("SINGLE_LOCK_HELPER_PATH"); p != "" {
		_, err := single.New(single.Options{Path: p})
		if err == nil {
			fmt.Println("OPENED")
			os.Exit(0)
		}
		fmt.Println("ERROR:", err)
		os.Exit(3)
	}
	p := filepath.Join(t.TempDir(), "coord.json")
	c, err := single.New(single.Options{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "SINGLE_LOCK_HELPER_PATH="+p)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a second process opened the locked file: %s", out)
	}
	if !strings.Contains(string(out), "locked by another process") {
		t.Fatalf("second process failed without the lock error: %v: %s", err, out)
	}
}

// TestFileIsAtomicAndReadable checks what lands on disk: a well-formed JSON file with the
// values and versions, and no temporary files left behind.
func TestFileIsAtomicAndReadable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "coord.json")
	c, err := single.New(single.Options{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	v, err := c.Put(ctx, "instances/orders/offset", []byte(`{"pos":4}`), coord.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "instances/orders/offset", []byte(`{"pos":8}`), v); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Format int
		Values map[string]struct {
			Data    []byte
			Version int64
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("file is not JSON: %v\n%s", err, b)
	}
	got := f.Values["instances/orders/offset"]
	if string(got.Data) != `{"pos":8}` || got.Version != v+1 {
		t.Fatalf("file holds %q version %d, want %q version %d", got.Data, got.Version, `{"pos":8}`, v+1)
	}
	entries, err := os.ReadDir(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

// TestPutFailureChangesNothing makes the atomic rename fail (a directory now sits where the
// file was) and checks the failed Put left memory as it was.
func TestPutFailureChangesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "coord.json")
	c, err := single.New(single.Options{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	v, err := c.Put(ctx, "k", []byte("before"), coord.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "blocker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "k", []byte("after"), v); err == nil {
		t.Fatal("Put succeeded although the file could not be replaced")
	}
	got, err := c.Get(ctx, "k")
	if err != nil || string(got.Data) != "before" || got.Version != v {
		t.Fatalf("after a failed Put: %q version %d (%v), want %q version %d", got.Data, got.Version, err, "before", v)
	}
	if _, err := c.Put(ctx, "new", []byte("x"), coord.NoVersion); err == nil {
		t.Fatal("creating a key succeeded although the file could not be replaced")
	}
	if _, err := c.Get(ctx, "new"); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("a failed create left the key behind: %v", err)
	}
	if err := c.Delete(ctx, "k", coord.AnyVersion); err == nil {
		t.Fatal("Delete succeeded although the file could not be replaced")
	}
	if _, err := c.Get(ctx, "k"); err != nil {
		t.Fatalf("a failed Delete removed the key: %v", err)
	}
	if _, err := c.Campaign(ctx, "lead", nil); err == nil {
		t.Fatal("Campaign succeeded although its fencing token could not be persisted")
	}
}

func BenchmarkPut(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			c, err := single.New(single.Options{Path: filepath.Join(b.TempDir(), "coord.json")})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			for i := range n {
				if _, err := c.Put(ctx, fmt.Sprintf("instances/i%d/offset", i), []byte(`{"file":"bin.000001","pos":4}`), coord.NoVersion); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := c.Put(ctx, fmt.Sprintf("instances/i%d/offset", i%n), []byte(`{"file":"bin.000001","pos":8}`), coord.AnyVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzOpen feeds arbitrary file contents to New: it must refuse or accept them without
// panicking, and an accepted file must be usable.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(`{"format":1,"token":3,"values":{"a/b":{"data":"eyJwb3MiOjR9","version":2}}}`))
	f.Add([]byte(`{"format":1,"values":{"a":`))
	f.Add([]byte(`{"format":1,"values":{"":{"data":null,"version":-5}}}`))
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, content []byte) {
		p := filepath.Join(t.TempDir(), "coord.json")
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := single.New(single.Options{Path: p})
		if err != nil {
			return
		}
		defer c.Close()
		ctx := context.Background()
		if _, err := c.Put(ctx, "fuzz/key", []byte("x"), coord.AnyVersion); err != nil {
			t.Fatalf("Put on an accepted file: %v", err)
		}
		if _, err := c.Campaign(ctx, "fuzz/lead", nil); err != nil {
			t.Fatalf("Campaign on an accepted file: %v", err)
		}
	})
}
