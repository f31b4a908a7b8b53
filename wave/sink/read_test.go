package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/bustest"
	"github.com/binlake/binlake/internal/testenv"
)

// rowsFile writes, through the file sink, messages on topics a and b (a0 b1 a2 b3 a4,
// the last a text value that is not JSON), then a line that is not the sink's and half a
// line, as a crash mid-write leaves it.
func rowsFile(t *testing.T) (string, *Writer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	w, err := OpenFile(FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var msgs []bus.Message
	for i := range 5 {
		topic := "a"
		if i%2 == 1 {
			topic = "b"
		}
		msgs = append(msgs, bus.Message{Topic: topic, Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	msgs[4].Value = []byte("plain text")
	if err := w.Publish(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	appendRaw(t, path, "not json\n{\"topic\":\"a\",\"key\":\"k6\",\"mess")
	return path, w
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// show is a message as the tests compare it: "offset topic key value".
// showOK is show for bustest.StartReading.
func showOK(m bus.Message) (string, error) { return show(m), nil }

func show(m bus.Message) string {
	return fmt.Sprintf("%d %s %s %s", m.Offset, m.Topic, m.Key, m.Value)
}

func readAll(t *testing.T, r *FileReader, opts bus.ReadOptions) ([]string, error) {
	t.Helper()
	var got []string
	err := r.Read(context.Background(), opts, func(m bus.Message) error {
		got = append(got, show(m))
		return nil
	})
	return got, err
}

// TestFileReaderFrom: each start position, with and without a topic; offsets are line
// numbers; a line that is not the sink's comes as it is; half a line is not read.
func TestFileReaderFrom(t *testing.T) {
	path, _ := rowsFile(t)
	r := &FileReader{Path: path}
	all := []string{`0 a k0 {"i":0}`, `1 b k1 {"i":1}`, `2 a k2 {"i":2}`, `3 b k3 {"i":3}`, `4 a k4 plain text`, `5   not json`}
	for _, tc := range []struct {
		name  string
		topic string
		from  bus.From
		want  []string
	}{
		{"oldest", "", bus.From{Kind: bus.FromOldest}, all},
		{"offset", "", bus.From{Kind: bus.FromOffset, N: 3}, all[3:]},
		{"offset past the end", "", bus.From{Kind: bus.FromOffset, N: 99}, nil},
		{"newest", "", bus.From{Kind: bus.FromNewest}, nil},
		{"last 2", "", bus.From{Kind: bus.FromLast, N: 2}, all[4:]},
		{"last 99", "", bus.From{Kind: bus.FromLast, N: 99}, all},
		{"topic a", "a", bus.From{Kind: bus.FromOldest}, []string{all[0], all[2], all[4], all[5]}},
		{"topic b from offset 2", "b", bus.From{Kind: bus.FromOffset, N: 2}, []string{all[3], all[5]}},
		{"last 2 of topic b", "b", bus.From{Kind: bus.FromLast, N: 2}, []string{all[3], all[5]}},
		{"last 0", "b", bus.From{Kind: bus.FromLast}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, r, bus.ReadOptions{Topic: tc.topic, From: tc.from})
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	_, err := readAll(t, r, bus.ReadOptions{From: bus.From{Kind: bus.FromTime, Time: time.Now()}})
	if !errors.Is(err, bus.ErrNotSupported) || !strings.Contains(err.Error(), "a rows file keeps no publish time per line") {
		t.Errorf("from a time: %v", err)
	}
	_, err = readAll(t, r, bus.ReadOptions{Partitions: []int{1}})
	if !errors.Is(err, bus.ErrNoSuchPartition) {
		t.Errorf("partition 1: %v", err)
	}
	_, err = readAll(t, &FileReader{Path: filepath.Join(t.TempDir(), "none.jsonl")}, bus.ReadOptions{})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "none.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	if err := r.Read(cctx, bus.ReadOptions{}, func(bus.Message) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("Read with its context ended: %v after %d messages; want nil after none (Ctrl-C stops a long file)", err, n)
	}
	stop := errors.New("stop")
	n = 0
	err = r.Read(context.Background(), bus.ReadOptions{}, func(bus.Message) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("a handler's error ends Read: %v after %d messages", err, n)
	}
}

// TestFileReaderLongLine: a long line that is not a sink's is an error naming it, not
// all the memory; a sink line is read whatever its length (one of 88 MB, a 63 MiB row,
// stopped tail, and every line after it was out of reach: an outside trial).
func TestFileReaderLongLine(t *testing.T) {
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 1 << 10
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, []byte("{}\n"+strings.Repeat("x", 1<<11)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, &FileReader{Path: path}, bus.ReadOptions{})
	if err == nil || err.Error() != "read "+path+": line 1 is longer than 1024 bytes and does not begin as a rows file's lines ({\"topic\":): not a rows file?" || len(got) != 1 {
		t.Errorf("got %q, %v", got, err)
	}
	sinkPath := filepath.Join(t.TempDir(), "rows.jsonl")
	w, err := OpenFile(FileOptions{Path: sinkPath})
	if err != nil {
		t.Fatal(err)
	}
	big := `{"blob":"` + strings.Repeat("x", 1<<12) + `"}`
	if err := w.Publish(context.Background(), bus.Message{Topic: "t", Key: []byte("k1"), Value: []byte(big)},
		bus.Message{Topic: "t", Key: []byte("k2"), Value: []byte(`{"after":1}`)}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err = readAll(t, &FileReader{Path: sinkPath}, bus.ReadOptions{})
	if err != nil || len(got) != 2 || got[0] != "0 t k1 "+big || got[1] != `1 t k2 {"after":1}` {
		t.Errorf("a sink line of %d bytes and one after it: %d read (%.40q…), %v", len(big), len(got), got, err)
	}
}

// TestFileReaderFollow: after the end, lines appended by the sink come as they are
// written, the half line once its end is written; a file cut back (the sink does so after
// a failed write) is read on from where it is cut; Read ends with its context.
func TestFileReaderFollow(t *testing.T) {
	path, w := rowsFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := bustest.StartReading(t, func(handle func(bus.Message) error) error {
		return (&FileReader{Path: path, Poll: 10 * time.Millisecond}).Read(ctx, bus.ReadOptions{Topic: "a", From: bus.From{Kind: bus.FromLast, N: 1}, Follow: true}, handle)
	}, showOK)
	next := r.Next
	next(`5   not json`) // the end of what was there: now the half line's end
	appendRaw(t, path, "age\":{\"i\":6}}\n")
	next(`6 a k6 {"i":6}`)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	if err := w.Publish(ctx, bus.Message{Topic: "b", Key: []byte("k7"), Value: []byte("{}")}, bus.Message{Topic: "a", Key: []byte("k8"), Value: []byte(`{"i":8}`)}); err != nil {
		t.Fatal(err)
	}
	next(`8 a k8 {"i":8}`)
	// Cut back to before line 7, then lines written again: offsets go on from line 7.
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	// Line 7 again, shorter than lines 7 and 8 were: the file stays shorter than what
	// the reader read, so that it sees the cut whenever it polls.
	appendRaw(t, path, `{"topic":"a","key":"k7b","message":{"i":7}}`+"\n")
	next(`7 a k7b {"i":7}`)
	cancel()
	if err := <-r.Done(); err != nil {
		t.Errorf("Read after its context ended: %v", err)
	}
}

// TestFileReaderFollowsTheName: the rows file renamed by a rotation (or removed) and made
// again at its path by the sink: a following reader delivers the old file's last lines,
// then the new file's from its first (offsets from 0 again), as `tail -F` follows a name.
// It went on reading the old file, and showed nothing more.
func TestFileReaderFollowsTheName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	w, err := OpenFile(FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg := func(i int) bus.Message {
		return bus.Message{Topic: "a", Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))}
	}
	if err := w.Publish(ctx, msg(0)); err != nil {
		t.Fatal(err)
	}
	r := bustest.StartReading(t, func(handle func(bus.Message) error) error {
		return (&FileReader{Path: path, Poll: 10 * time.Millisecond}).Read(ctx, bus.ReadOptions{From: bus.From{Kind: bus.FromOldest}, Follow: true}, handle)
	}, showOK)
	r.Next(`0 a k0 {"i":0}`)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	// Written to the renamed file before the sink's next sync notices.
	if err := w.Publish(ctx, msg(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err == nil {
		t.Fatal("Sync after the rename succeeded")
	}
	for _, i := range []int{1, 2} { // the wave's replay, into the new file
		if err := w.Publish(ctx, msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	r.Next(`1 a k1 {"i":1}`) // the old file's last line
	r.Next(`0 a k1 {"i":1}`) // the new file's
	r.Next(`1 a k2 {"i":2}`)
	cancel()
	if err := <-r.Done(); err != nil {
		t.Errorf("Read after its context ended: %v", err)
	}
}

// TestFileReaderFollowWaitsForTheFile: following a path with no file yet (removed by a
// rotation, before the wave's next commit makes it again) waits for it, says so once,
// and reads it from its start whatever the start asked for (all of it is new), as
// `tail -F`; it exited at once ("no such file"). Not
// following, a missing file is still an error.
func TestFileReaderFollowWaitsForTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := (&FileReader{Path: path}).Read(t.Context(), bus.ReadOptions{From: bus.From{Kind: bus.FromOldest}}, func(bus.Message) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading a missing file without following: %v, want not exist", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testenv.SyncBuffer
	r := bustest.StartReading(t, func(handle func(bus.Message) error) error {
		fr := &FileReader{Path: path, Poll: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&logs, nil))}
		return fr.Read(ctx, bus.ReadOptions{From: bus.From{Kind: bus.FromNewest}, Follow: true}, handle)
	}, showOK)
	for !strings.Contains(logs.String(), "waiting for it") {
		select {
		case err := <-r.Done():
			t.Fatalf("Read returned before the file was made: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	w, err := OpenFile(FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Publish(ctx, bus.Message{Topic: "a", Key: []byte("k0"), Value: []byte(`{"i":0}`)}); err != nil {
		t.Fatal(err)
	}
	r.Next(`0 a k0 {"i":0}`)
	cancel()
	if err := <-r.Done(); err != nil {
		t.Errorf("Read after its context ended: %v", err)
	}
	if n := strings.Count(logs.String(), "waiting for it"); n != 1 {
		t.Errorf("said it waits %d times, want once:\n%s", n, logs.String())
	}
}
