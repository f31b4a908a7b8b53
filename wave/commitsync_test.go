package wave

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/sink"
)

// syncCheckFile is the rows file, recording at each fsync how many lines it makes
// durable and checking, against the real coordinator, that no committed offset counts
// more rows than the previous fsync made durable.
type syncCheckFile struct {
	*os.File
	t      *testing.T
	c      coord.Coordinator
	id     string // the instance whose offset it reads
	synced int64  // lines durable after the last Sync
	fail   bool   // the next Sync fails
}

func (f *syncCheckFile) committedRows() int64 {
	p, _, ok, err := cluster.ReadOffset(context.Background(), f.c, f.id)
	if err != nil {
		f.t.Fatal(err)
	}
	if !ok {
		return 0
	}
	return p.Rows
}

func (f *syncCheckFile) Sync() error {
	if got := f.committedRows(); got > f.synced {
		f.t.Errorf("an offset of %d rows was committed while %d lines were durable", got, f.synced)
	}
	if f.fail {
		f.fail = false
		return errors.New("injected fsync failure")
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		return err
	}
	f.synced = int64(bytes.Count(data, []byte("\n")))
	return nil
}

// TestCommitSyncsTheFileSinkFirst: with the file sink, the committer fsyncs the rows
// before it writes the offset to the coordinator, so after a crash of the machine the
// offset never points past rows that are not in the file. A failed fsync stops the
// term's commits.
func TestCommitSyncsTheFileSinkFirst(t *testing.T) {
	dir := t.TempDir()
	c, err := single.New(single.Options{Path: filepath.Join(dir, "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := cluster.OffsetKey("i")
	f := &syncCheckFile{t: t, c: c, id: "i"}
	pub, err := sink.OpenFile(sink.FileOptions{Path: filepath.Join(dir, "rows.jsonl"), Open: func(path string) (sink.File, error) {
		of, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
		f.File = of // a reopen after a failure keeps what was synced
		return f, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	cm := &committer{c: c, key: key, id: "i", interval: time.Hour, m: newMetrics(),
		log: slog.New(slog.DiscardHandler), now: time.Now, version: coord.NoVersion, kick: make(chan struct{}, 1),
		sync: syncOf(pub)}
	ctx := context.Background()
	rows := int64(0)
	publishAndCommit := func(n int) error {
		t.Helper()
		msgs := make([]bus.Message, n)
		for i := range msgs {
			msgs[i] = bus.Message{Topic: "t", Key: []byte("k"), Value: []byte(fmt.Sprintf(`{"n":%d}`, rows+int64(i)))}
		}
		if err := pub.Publish(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		rows += int64(n)
		cm.ack(cluster.Position{File: "bin.000001", Pos: uint32(rows), Rows: rows})
		return cm.flush(ctx)
	}
	for _, n := range []int{3, 1, 5} {
		if err := publishAndCommit(n); err != nil {
			t.Fatal(err)
		}
		if got := f.committedRows(); got != rows || f.synced != rows {
			t.Fatalf("after %d rows: committed %d, durable %d", rows, got, f.synced)
		}
	}

	f.fail = true
	if err := publishAndCommit(2); err == nil || !strings.Contains(err.Error(), "injected fsync failure") {
		t.Fatalf("flush after a failed fsync: %v, want the fsync's error", err)
	}
	// Nothing more is committed in this term: the rows acknowledged before the failure
	// are not known durable.
	if err := publishAndCommit(1); err == nil {
		t.Fatal("a commit after a failed fsync succeeded")
	}
	if got := f.committedRows(); got != 9 {
		t.Fatalf("committed %d rows after the failed fsync, want the 9 synced before it", got)
	}
}
