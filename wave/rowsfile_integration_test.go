package wave_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
	"github.com/binlake/binlake/wave/sink"
)

// TestRowsFileRemovedIntegration: the rows file of the embedded shape (`binlake up`'s
// rows.jsonl) removed while the wave writes it, as an operator frees the disk, and later
// renamed by a rotation: every row written after each is in the file at the path once
// the wave has gone on. Before, the wave wrote on into the removed file, committed past
// the rows, and they were lost (found by an outside trial: a row inserted after `rm`
// never came back, even after a restart).
func TestRowsFileRemovedIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, _ := testenv.ScratchDatabase(t, "rowsfile")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
	ctx := testenv.Context(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "rows.jsonl")
	c, err := single.New(single.Options{Path: filepath.Join(dir, "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inst := &cluster.Instance{ID: "rowsfile",
		Source:        cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Start:         wavetest.CurrentPos(t),
		Subscriptions: []cluster.Subscription{{Name: "t", Topic: "rowsfile.rows", Include: []string{db + `\.t`}}}}
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-1", nil); err != nil {
		t.Fatal(err)
	}
	pub, err := sink.OpenFile(sink.FileOptions{Path: out})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	wv, err := wave.New(wave.Options{Node: "wave-1", HTTPAddr: "127.0.0.1:0", Coord: c, Publisher: pub,
		PollInterval: 200 * time.Millisecond, Logger: testLogger(t),
		Pipeline: wave.PipelineOptions{CommitInterval: 100 * time.Millisecond, RetryBackoff: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- wv.Run(ctx) }()
	defer func() {
		wv.Close()
		if err := <-errc; err != nil {
			t.Errorf("wave Run: %v", err)
		}
	}()

	insert := func(from, to int) {
		for id := from; id < to; id++ {
			exec(fmt.Sprintf("INSERT INTO %s.t VALUES (%d)", db, id))
		}
	}
	insert(0, 10)
	waitRowsFileIDs(t, out, 0, 10)
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	insert(10, 30)
	waitRowsFileIDs(t, out, 10, 30)
	if err := os.Rename(out, out+".1"); err != nil { // a rotation without copytruncate
		t.Fatal(err)
	}
	insert(30, 50)
	waitRowsFileIDs(t, out, 30, 50)
}

// waitRowsFileIDs waits until the rows file at path holds the inserts of ids from..to-1, each
// at least once.
func waitRowsFileIDs(t *testing.T, path string, from, to int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := map[int]bool{}
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var l struct {
					Message struct {
						Data struct{ ID int } `json:"data"`
					} `json:"message"`
				}
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("a line of %s is not JSON: %v", path, err)
				}
				seen[l.Message.Data.ID] = true
			}
			f.Close()
		}
		missing := 0
		for id := from; id < to; id++ {
			if !seen[id] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of the rows %d…%d missing after 30 s", path, missing, from, to-1)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
