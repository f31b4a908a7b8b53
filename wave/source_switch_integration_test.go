package wave_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// switchServers starts a primary and a replica that follows it by GTID (two private
// MariaDBs: the shared test server's binlog carries other tests' transactions, which a
// filtered replica would not log, so a reader's GTID position could be missing on it),
// both with a general log in a table, where a test finds the KILLs a server received.
func switchServers(t *testing.T) (prim, repl *testenv.PrivateMariaDB, pc, rc *client.Conn) {
	t.Helper()
	s := testenv.StartMariaDBs(t,
		testenv.MariaDBOptions{ServerID: 11, DomainID: 1, Binlog: "primary-bin", GeneralLog: true},
		testenv.MariaDBOptions{ServerID: 12, DomainID: 2, Binlog: "replica-bin", GeneralLog: true})
	prim, repl = s[0], s[1]
	pc, rc = prim.Conn(t), repl.Conn(t)
	_, port, _ := strings.Cut(prim.Addr, ":")
	wavetest.MustExec(t, rc, "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT="+port+", MASTER_USER='root', MASTER_USE_GTID=slave_pos")
	wavetest.MustExec(t, rc, "START SLAVE")
	return prim, repl, pc, rc
}

// rowIDs delivers the data.id of every message on topic (read by group "verify") until
// ctx ends; a message without one is reported as -1.
func rowIDs(t *testing.T, ctx context.Context, b *memory.Bus, topic string) <-chan int {
	t.Helper()
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: "verify"})
	if err != nil {
		t.Fatal(err)
	}
	ids := make(chan int, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Subscribe(ctx, func(ctx context.Context, m bus.Message) error {
			var v struct {
				Data struct{ ID *int } `json:"data"`
			}
			id := -1
			if json.Unmarshal(m.Value, &v) == nil && v.Data.ID != nil {
				id = *v.Data.ID
			}
			select {
			case ids <- id:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	t.Cleanup(func() { <-done; s.Close() })
	return ids
}

// waitIDs reads ids until every one of want was seen, counting each id in seen. It fails
// at once when the wave's instance stops in the error state.
func waitIDs(t *testing.T, ctx context.Context, who string, wv *wave.Wave, ids <-chan int, want []int, seen map[int]int) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for missing := missingIDs(want, seen); len(missing) > 0; missing = missingIDs(want, seen) {
		select {
		case id := <-ids:
			seen[id]++
		case <-tick.C:
			for _, st := range wv.Status() {
				if st.State == cluster.StateError {
					t.Fatalf("%s: instance %s stopped: %s", who, st.ID, st.Error)
				}
			}
		case <-ctx.Done():
			t.Fatalf("%s: %d of %d rows never delivered (first missing: id %d)", who, len(missing), len(want), missing[0])
		}
	}
}

func missingIDs(want []int, seen map[int]int) []int {
	var m []int
	for _, id := range want {
		if seen[id] == 0 {
			m = append(m, id)
		}
	}
	return m
}

// insertRows writes ids from..to (inclusive) into sw.t, ten per transaction.
func insertRows(t *testing.T, c *client.Conn, from, to int) []int {
	t.Helper()
	var ids []int
	for lo := from; lo <= to; lo += 10 {
		var vals []string
		for id := lo; id <= min(lo+9, to); id++ {
			vals = append(vals, fmt.Sprintf("(%d,'r%d')", id, id))
			ids = append(ids, id)
		}
		wavetest.MustExec(t, c, "INSERT INTO sw.t VALUES "+strings.Join(vals, ","))
	}
	return ids
}

// waitRegistered waits until the server lists a replica (a binlog reader) with server id
// id: the reader is connected and past onConnect.
func waitRegistered(t *testing.T, ctx context.Context, c *client.Conn, id uint32) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := c.Execute("SHOW SLAVE HOSTS")
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.RowNumber() {
			if sid, _ := r.GetUint(i, 0); sid == uint64(id) {
				return
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("binlog reader with server id %d never registered on the source", id)
		}
	}
}

// TestWaveSourceSwitchIntegration moves the source's address (a proxy) from the primary to
// its promoted replica while two instances read through it:
//   - "a", started by GTID, has read rows on the primary: it must resume on the replica
//     with no row lost, and its reconnect must send no KILL to the replica (the old
//     connection's id means nothing there, or another session);
//   - "b", started by file/pos at the primary's end, has read no transaction before the
//     switch: it must resume on the replica by the GTID position of that file/pos (the
//     replica has no file of that name) and deliver exactly the rows written after it.
func TestWaveSourceSwitchIntegration(t *testing.T) {
	primSrv, repl, prim, rc := switchServers(t)
	proxy := testenv.StartProxy(t, primSrv.Addr, testenv.Copy)
	wavetest.MustExec(t, prim, "CREATE DATABASE sw")
	wavetest.MustExec(t, prim, "CREATE TABLE sw.t (id INT PRIMARY KEY, v VARCHAR(20))")

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	instance := func(id string, start *cluster.Position) *cluster.Instance {
		return &cluster.Instance{ID: id, Start: start,
			Source:        cluster.Source{Addr: proxy.Addr(), User: "root", Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
			Subscriptions: []cluster.Subscription{{Name: "t", Topic: "sw." + id, Include: []string{`sw\.t`}}}}
	}

	instA := instance("a", wavetest.MasterStatus(t, prim))
	busA, waveA, _ := embedded(t, ctx, instA, 0)
	idsA := rowIDs(t, ctx, busA, "sw.a")
	before := insertRows(t, prim, 1, 40)
	seenA := map[int]int{}
	waitIDs(t, ctx, "instance a before the switch", waveA, idsA, before, seenA)

	startB := wavetest.MasterStatus(t, prim)
	startB.GTIDSet = "" // a start by file/pos
	instB := instance("b", startB)
	busB, waveB, _ := embedded(t, ctx, instB, 0)
	idsB := rowIDs(t, ctx, busB, "sw.b")
	waitRegistered(t, ctx, prim, instB.Source.ServerID)

	// Fail over: the replica catches up, is promoted, and the address moves to it.
	end := wavetest.MasterStatus(t, prim).GTIDSet
	r, err := rc.Execute(fmt.Sprintf("SELECT MASTER_GTID_WAIT('%s', 30)", end))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.GetInt(0, 0); v != 0 {
		t.Fatalf("the replica did not reach the primary's %s", end)
	}
	wavetest.MustExec(t, rc, "STOP SLAVE")
	wavetest.MustExec(t, rc, "RESET SLAVE ALL")
	proxy.Switch(repl.Addr)
	after := insertRows(t, rc, 41, 80)

	waitIDs(t, ctx, "instance a after the switch", waveA, idsA, after, seenA)
	// a has reconnected (it delivered rows from the replica): any KILL it sent on the
	// way is in the replica's log. b is checked again once it has reconnected too.
	noKills := func(when string) {
		if k := repl.Statements(t, rc, "KILL"); len(k) > 0 {
			t.Fatalf("%s: the replica got KILLs for connections it never had: %q", when, k)
		}
	}
	noKills("after instance a reconnected")
	seenB := map[int]int{}
	waitIDs(t, ctx, "instance b (started by file/pos) after the switch", waveB, idsB, after, seenB)
	for id, n := range seenB {
		if id < 41 {
			t.Errorf("instance b delivered row %d (%d times), written before its start", id, n)
		}
	}
	noKills("after instance b reconnected")
	t.Logf("instance a: %d distinct rows, %d messages; instance b: %d rows", len(seenA), sumCounts(seenA), len(seenB))
}

func sumCounts(m map[int]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}
