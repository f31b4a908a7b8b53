package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/bus"
)

// faultyFile is a real file that fails on demand: failWrite writes the first half of the
// next Write and returns an error, failSync fails the next Sync.
type faultyFile struct {
	*os.File
	failWrite, failSync bool
	opens               int
}

func (f *faultyFile) Write(b []byte) (int, error) {
	if f.failWrite {
		f.failWrite = false
		n, _ := f.File.Write(b[:len(b)/2])
		return n, errors.New("injected write failure")
	}
	return f.File.Write(b)
}

func (f *faultyFile) Sync() error {
	if f.failSync {
		f.failSync = false
		return errors.New("injected fsync failure")
	}
	return f.File.Sync()
}

func openFaulty(t *testing.T, path string, syncEach bool) (*Writer, *faultyFile) {
	t.Helper()
	ff := &faultyFile{}
	w, err := OpenFile(FileOptions{Path: path, Sync: syncEach, Open: func(p string) (File, error) {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
		ff.File = f
		ff.opens++
		return ff, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, ff
}

func rows(from, n int) []bus.Message {
	msgs := make([]bus.Message, n)
	for i := range msgs {
		msgs[i] = bus.Message{Topic: "t", Key: []byte(fmt.Sprint(from + i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, from+i))}
	}
	return msgs
}

// keys reads the file and returns the key of each line, failing on a line that is not
// whole JSON.
func keys(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("the file ends with a partial line: %q", data)
	}
	var out []string
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var line Line
		if err := json.Unmarshal(l, &line); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, line.Key)
	}
	return out
}

func seq(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// TestFileSinkRecoversFromAFailedWrite: a write that fails half-way is cut back when the
// retried Publish reopens the file, so each row is in the file exactly once.
func TestFileSinkRecoversFromAFailedWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	w, ff := openFaulty(t, path, false)
	ctx := context.Background()
	if err := w.Publish(ctx, rows(0, 3)...); err != nil {
		t.Fatal(err)
	}
	ff.failWrite = true
	if err := w.Publish(ctx, rows(3, 4)...); err == nil || !strings.Contains(err.Error(), "injected write failure") {
		t.Fatalf("Publish over a failing write: %v", err)
	}
	if err := w.Publish(ctx, rows(3, 4)...); err != nil {
		t.Fatalf("the retried Publish: %v", err)
	}
	if err := w.Publish(ctx, rows(7, 2)...); err != nil {
		t.Fatal(err)
	}
	if ff.opens != 2 {
		t.Fatalf("the file was opened %d times, want 2 (once more after the failure)", ff.opens)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, path); !slices.Equal(got, seq(0, 9)) {
		t.Fatalf("rows in the file: %v, want 0…8 once each", got)
	}
}

// TestFileSinkAfterTheFileWasEmptiedInPlace: an operator empties the rows file while the
// wave appends (truncate -s 0, logrotate's copytruncate); a write failing after that is
// retried at the new end, not after zeros up to the length the file had.
func TestFileSinkAfterTheFileWasEmptiedInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	w, ff := openFaulty(t, path, false)
	ctx := context.Background()
	if err := w.Publish(ctx, rows(0, 3)...); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Publish(ctx, rows(3, 2)...); err != nil {
		t.Fatal(err)
	}
	ff.failWrite = true
	if err := w.Publish(ctx, rows(5, 2)...); err == nil {
		t.Fatal("Publish over a failing write succeeded")
	}
	if err := w.Publish(ctx, rows(5, 2)...); err != nil {
		t.Fatalf("the retried Publish: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, path); !slices.Equal(got, seq(3, 7)) {
		t.Fatalf("rows in the file: %v, want 3…6 once each", got)
	}
}

// TestFileSinkAfterTheFileWasRemoved: the rows file removed while the wave appends is
// created again by the reopen after a failed write, holding the retried rows alone.
func TestFileSinkAfterTheFileWasRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	w, ff := openFaulty(t, path, false)
	ctx := context.Background()
	if err := w.Publish(ctx, rows(0, 3)...); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ff.failWrite = true
	if err := w.Publish(ctx, rows(3, 2)...); err == nil {
		t.Fatal("Publish over a failing write succeeded")
	}
	if err := w.Publish(ctx, rows(3, 2)...); err != nil {
		t.Fatalf("the retried Publish: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, path); !slices.Equal(got, seq(3, 5)) {
		t.Fatalf("rows in the file: %v, want 3 and 4", got)
	}
}

// TestFileSinkSyncNoticesTheFileGone: the rows file removed (rm to free the disk) or
// renamed (a log rotation without copytruncate) while the wave appends: the rows written
// after went to a file no longer at the path, and were lost with it (rm) or kept only
// in the rotated file though the wave committed past them. The sync before the commit
// fails instead, naming what happened, so the wave publishes again from its committed
// offset, into a new file at the path.
func TestFileSinkSyncNoticesTheFileGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone func(path string) error
		want string
	}{
		{"removed", os.Remove, "was removed or renamed while the wave wrote it"},
		{"renamed", func(path string) error { return os.Rename(path, path+".1") }, "was removed or renamed while the wave wrote it"},
		{"rotated", func(path string) error { // logrotate's create: renamed, an empty file made
			if err := os.Rename(path, path+".1"); err != nil {
				return err
			}
			return os.WriteFile(path, nil, 0o644)
		}, "was replaced while the wave wrote it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rows.jsonl")
			w, _ := openFaulty(t, path, false)
			ctx := context.Background()
			if err := w.Publish(ctx, rows(0, 3)...); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := tc.gone(path); err != nil {
				t.Fatal(err)
			}
			if err := w.Publish(ctx, rows(3, 2)...); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Sync after the file was %s: %v, want an error saying %q", tc.name, err, tc.want)
			}
			// The wave publishes again from its committed offset (after row 2).
			if err := w.Publish(ctx, rows(3, 2)...); err != nil {
				t.Fatalf("the replayed Publish: %v", err)
			}
			if err := w.Sync(); err != nil {
				t.Fatalf("Sync of the new file: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := keys(t, path); !slices.Equal(got, seq(3, 5)) {
				t.Fatalf("rows in the new file: %v, want 3 and 4", got)
			}
		})
	}
}

// TestFileSinkCutsBackToTheSyncedLengthAfterAFailedSync: after a failed fsync the lines
// written since the last good one are not known durable; the wave publishes them again
// from its committed offset, so the file drops them rather than keeping two copies.
func TestFileSinkCutsBackToTheSyncedLengthAfterAFailedSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	w, ff := openFaulty(t, path, false)
	ctx := context.Background()
	if err := w.Publish(ctx, rows(0, 2)...); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Publish(ctx, rows(2, 2)...); err != nil {
		t.Fatal(err)
	}
	ff.failSync = true
	if err := w.Sync(); err == nil || !strings.Contains(err.Error(), "injected fsync failure") {
		t.Fatalf("Sync: %v, want the fsync's error", err)
	}
	// The wave's restarted pipeline publishes rows 2 and 3 again.
	if err := w.Publish(ctx, rows(2, 3)...); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, path); !slices.Equal(got, seq(0, 5)) {
		t.Fatalf("rows in the file: %v, want 0…4 once each", got)
	}
}

// TestFileSinkSyncEachPublish: with Sync set, a failed fsync fails the Publish and its
// retry writes the rows once.
func TestFileSinkSyncEachPublish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	w, ff := openFaulty(t, path, true)
	ctx := context.Background()
	if err := w.Publish(ctx, rows(0, 2)...); err != nil {
		t.Fatal(err)
	}
	ff.failSync = true
	if err := w.Publish(ctx, rows(2, 2)...); err == nil {
		t.Fatal("Publish succeeded over a failed fsync")
	}
	if err := w.Publish(ctx, rows(2, 2)...); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, path); !slices.Equal(got, seq(0, 4)) {
		t.Fatalf("rows in the file: %v, want 0…3 once each", got)
	}
}

// TestOpenFileCutsAPartialLastLine: a line cut by a crash is dropped on open, so the next
// row does not run into it.
func TestOpenFileCutsAPartialLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	whole := `{"topic":"t","key":"0","message":{"n":0}}` + "\n"
	for _, tc := range []struct{ name, content, want string }{
		{"partial after lines", whole + `{"topic":"t","ke`, whole},
		{"only a partial line", `{"topic"`, ""},
		{"whole lines", whole, whole},
		{"a partial line longer than one read", whole + strings.Repeat("x", 100<<10), whole},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := OpenFile(FileOptions{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Publish(context.Background(), rows(1, 1)...); err != nil {
				t.Fatal(err)
			}
			w.Close()
			data, _ := os.ReadFile(path)
			if want := tc.want + `{"topic":"t","key":"1","message":{"n":1}}` + "\n"; string(data) != want {
				t.Fatalf("file = %q, want %q", data, want)
			}
		})
	}
}

func TestPublishRefusesAnEmptyTopicAndWritesNothing(t *testing.T) {
	var b bytes.Buffer
	w := New(&b)
	msgs := append(rows(0, 2), bus.Message{Value: []byte("x")})
	if err := w.Publish(context.Background(), msgs...); err == nil || !strings.Contains(err.Error(), "message 2: empty topic") {
		t.Fatalf("Publish: %v", err)
	}
	if b.Len() != 0 {
		t.Fatalf("wrote %q before refusing the batch", b.String())
	}
	if err := w.Publish(context.Background(), bus.Message{Topic: "t", Value: []byte("not json")}); err != nil {
		t.Fatal(err)
	}
	if want := `{"topic":"t","key":"","message":"not json"}` + "\n"; b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
}

// TestPublishedValuesReadBack: each kind of value a format writes is written as a line
// that reads back (decodeLine, what `binlake tail -file` reads) as it was published: a
// JSON object embedded, text as a string, the bytes of a binary format (protobuf,
// canal-protobuf: not UTF-8) in base64, and a tombstone's nil value as no message at all.
func TestPublishedValuesReadBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value []byte
		line  string
	}{
		{"json", []byte(`{"id":7}`), `{"topic":"t","key":"k","message":{"id":7}}`},
		{"text", []byte("plain text"), `{"topic":"t","key":"k","message":"plain text"}`},
		{"empty", []byte{}, `{"topic":"t","key":"k","message":""}`},
		{"protobuf", []byte("\x0a\x05shop\x80\x12\x02\xff\x00"), `{"topic":"t","key":"k","message_base64":"CgVzaG9wgBIC/wA="}`},
		{"tombstone", nil, `{"topic":"t","key":"k"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := New(&buf).Publish(context.Background(), bus.Message{Topic: "t", Key: []byte("k"), Value: tc.value}); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(buf.String(), "\n"); got != tc.line {
				t.Errorf("line %s, want %s", got, tc.line)
			}
			m, ok := decodeLine(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			if !ok || m.Topic != "t" || string(m.Key) != "k" || !bytes.Equal(m.Value, tc.value) || (m.Value == nil) != (tc.value == nil) {
				t.Errorf("read back as %q (a sink line: %v), want %q", m.Value, ok, tc.value)
			}
		})
	}
}

// ctxRecorder records the context each write was given.
type ctxRecorder struct {
	bytes.Buffer
	ctxs []context.Context
}

func (c *ctxRecorder) WriteContext(ctx context.Context, b []byte) (int, error) {
	c.ctxs = append(c.ctxs, ctx)
	return c.Write(b)
}

// TestNewWritesWithThePublishContext: a writer with WriteContext gets the Publish's
// context (up's -rows - pipe holds a failed write until that context ends) and the same
// lines a plain writer gets.
func TestNewWritesWithThePublishContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "publish")
	rec := &ctxRecorder{}
	if err := New(rec).Publish(ctx, rows(0, 3)...); err != nil {
		t.Fatal(err)
	}
	if len(rec.ctxs) != 1 || rec.ctxs[0].Value(key{}) != "publish" {
		t.Fatalf("writes got %v, want the Publish's context once", rec.ctxs)
	}
	var plain bytes.Buffer
	if err := New(&plain).Publish(ctx, rows(0, 3)...); err != nil {
		t.Fatal(err)
	}
	if rec.String() != plain.String() || strings.Count(plain.String(), "\n") != 3 {
		t.Fatalf("lines differ:\n%s\nagainst\n%s", rec.String(), plain.String())
	}
}
