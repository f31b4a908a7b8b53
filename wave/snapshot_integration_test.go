package wave_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
	"github.com/binlake/binlake/wave/rowenc"
)

// typesDDL is a table with a column of every kind the row format encodes, and a
// two-column primary key whose order differs from the columns'.
const typesDDL = `CREATE TABLE t_types (
	id INT NOT NULL, k2 VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL,
	f FLOAT NULL, d DOUBLE NULL, dec1 DECIMAL(20,6) NULL,
	ts TIMESTAMP(3) NULL DEFAULT NULL, dt DATETIME(6) NULL, dt0 DATETIME NULL, da DATE NULL, ti TIME(3) NULL, y YEAR NULL,
	e ENUM('red','green','blue') NULL, s SET('a','b','c') NULL, b BIT(10) NULL, j JSON NULL,
	bl BLOB NULL, tx TEXT CHARACTER SET utf8mb4 NULL, vb VARBINARY(20) NULL,
	u BIGINT UNSIGNED NULL, i8 TINYINT NULL, mi MEDIUMINT UNSIGNED NULL, ch CHAR(5) NULL,
	PRIMARY KEY (k2, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// typesRows are rows of t_types: edges of each kind, and NULLs.
var typesRows = []string{
	`(1, 'a', 3.1415927, 2.718281828459045, '-12345678901234.123456', '2024-02-29 23:59:59.123', '2024-01-02 03:04:05.678901', '1999-12-31 23:59:59', '2024-01-02', '-838:59:59.999', 2024,
	  'green', 'a,c', b'1010101010', '{"k": [1, 2.5, "x"], "n": null}', X'00FF10', 'ütf8 😀', X'DEADBEEF', 18446744073709551615, -128, 16777215, 'ab')`,
	`(2, 'b', -0.5, -1e300, '0.000000', '1970-01-01 00:00:01.000', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00', '00:00:00', 0,
	  'red', '', b'0', '[]', '', '', '', 0, 127, 0, '')`,
	`(3, 'a', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	`(4, 'z"\\', 1e-10, 0, '99999999999999.999999', '2038-01-19 03:14:07.999', '9999-12-31 23:59:59.999999', '1000-01-01 00:00:00', '1000-01-01', '12:00:00.5', 1901,
	  'blue', 'a,b,c', b'1111111111', '{"a": {"b": {"c": "deep"}}}', X'', 'line1\nline2\ttab', X'00', 9007199254740993, 0, 1, 'x')`,
}

// decRows go into a table keyed by a DECIMAL whose values differ beyond a double's
// precision: resuming after one of them must not skip or repeat the next.
var decRows = []string{"('12345678901234567890.0000000001', 1)", "('12345678901234567890.0000000002', 2)",
	"('12345678901234567890.0000000003', 3)", "('-1.5', 4)", "('0', 5)"}

// TestSnapshotMatchesBinlogIntegration: a snapshot message of a row is the binlog's
// insert message of the same row, field for field, with the same key (so the same
// partition). One wave reads the inserts from the binlog; another, started after them,
// snapshots the table.
func TestSnapshotMatchesBinlogIntegration(t *testing.T) {
	conn := wavetest.Connect(t)
	w := newWorkload(t, 6) // a unique database; its own tables stay unused here
	wavetest.MustExec(t, conn, "USE "+w.db)
	wavetest.MustExec(t, conn, typesDDL)
	wavetest.MustExec(t, conn, "CREATE TABLE t_dec (d DECIMAL(30,10) NOT NULL PRIMARY KEY, v INT)")
	start := wavetest.CurrentPos(t)
	for _, r := range typesRows {
		wavetest.MustExec(t, conn, "INSERT INTO t_types VALUES "+r)
	}
	for _, r := range decRows {
		wavetest.MustExec(t, conn, "INSERT INTO t_dec VALUES "+r)
	}
	n := len(typesRows) + len(decRows)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := testenv.RequireMySQL(t)
	inst := func(id string, start *cluster.Position, snap *cluster.SnapshotOptions) *cluster.Instance {
		return &cluster.Instance{ID: id, Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
			Start: start, Snapshot: snap, Subscriptions: []cluster.Subscription{{Name: "all", Topic: "types",
				Include: []string{regexp.QuoteMeta(w.db) + `\.t_(types|dec)`}}}}
	}
	binlogBus, _, _ := embedded(t, ctx, inst("from-binlog", start, nil), 0)
	snapBus, _, _ := embedded(t, ctx, inst("from-snapshot", wavetest.CurrentPos(t), &cluster.SnapshotOptions{Initial: true, ChunkRows: 3}), 0)

	fromBinlog := readKeyed(t, ctx, binlogBus, "types", n)
	fromSnapshot := readKeyed(t, ctx, snapBus, "types", n)
	for key, b := range fromBinlog {
		s, ok := fromSnapshot[key]
		switch {
		case !ok:
			t.Errorf("key %s: in the binlog, not in the snapshot (snapshot keys: %v)", key, keysOf(fromSnapshot))
		case b.typ != rowenc.TypeInsert || s.typ != rowenc.TypeSnapshot:
			t.Errorf("key %s: types %s and %s, want insert and snapshot", key, b.typ, s.typ)
		case string(b.data) != string(s.data):
			t.Errorf("key %s: data differs\nbinlog:   %s\nsnapshot: %s", key, b.data, s.data)
		}
	}
	if len(fromSnapshot) != n || len(fromBinlog) != n {
		t.Errorf("snapshot has %d rows, the binlog %d, want %d", len(fromSnapshot), len(fromBinlog), n)
	}
}

// TestSnapshotRequestIntegration: `binlake instance snapshot` on a running instance.
// Its leader starts the snapshot within seconds (its poll, then a source heartbeat), skips (and names) a table
// without a primary key, shows the progress in the offset and its metrics, and does not
// run the same request twice.
func TestSnapshotRequestIntegration(t *testing.T) {
	conn := wavetest.Connect(t)
	w := newWorkload(t, 7)
	wavetest.MustExec(t, conn, "USE "+w.db)
	wavetest.MustExec(t, conn, typesDDL)
	wavetest.MustExec(t, conn, "CREATE TABLE t_nopk (a INT, b TEXT)")
	wavetest.MustExec(t, conn, "INSERT INTO t_nopk VALUES (1, 'x')")
	for _, r := range typesRows {
		wavetest.MustExec(t, conn, "INSERT INTO t_types VALUES "+r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := testenv.RequireMySQL(t)
	inst := &cluster.Instance{ID: "req", Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Start: wavetest.CurrentPos(t), Subscriptions: []cluster.Subscription{{Name: "all", Topic: "req", Include: []string{regexp.QuoteMeta(w.db) + `\.t_(types|nopk)`}}}}
	c := singleCoord(t)
	b, wv, addr := embeddedOn(t, ctx, c, inst, 0)
	// The wave lists the instance only once it has read the assignments, which may come
	// after its HTTP server is ready.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := wv.Status()
		require.Len(c, st, 1)
		assert.Equal(c, cluster.StateRunning, st[0].State)
	}, time.Minute, 20*time.Millisecond, "instance req running")
	req, err := cluster.RequestSnapshot(ctx, c, "req", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, m := range readKeyed(t, ctx, b, "req", len(typesRows)) {
		if m.typ != rowenc.TypeSnapshot || m.table != "t_types" {
			t.Errorf("key %s: a %s message of %s, want snapshot messages of t_types", k, m.typ, m.table)
		}
	}
	var p cluster.SnapshotProgress
	for ctx.Err() == nil {
		info, err := cluster.ShowInstance(ctx, c, "req", 0, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if info.Position != nil && info.Position.Snapshot != nil && info.Position.Snapshot.Done {
			p = *info.Position.Snapshot
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p.Request != req.ID || p.Rows != int64(len(typesRows)) || len(p.Skipped) != 1 || !strings.Contains(p.Skipped[0], "t_nopk: no primary key") {
		t.Fatalf("progress %+v: want request %s done with %d rows and t_nopk skipped for its missing primary key", p, req.ID, len(typesRows))
	}
	// The status takes the position after the coordinator has it (the committer's
	// onCommit), so it may show it a moment after the offset read above.
	// Polled here, not in require.EventuallyWithT's goroutine: HTTPGet fails the test.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		status := wavetest.HTTPGet(t, "http://"+addr+"/status")
		if strings.Contains(status, `"snapshot":{"request":"`+req.ID+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("/status does not show the snapshot %s after 10 s: %s", req.ID, status)
			break
		}
	}
	metrics := wavetest.HTTPGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{`binlake_wave_snapshot_rows{instance="req"} 4`, `binlake_wave_snapshot_tables_remaining{instance="req"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Polls later, the same request has not run again: after the snapshot's messages
	// comes a new row's, and nothing else.
	time.Sleep(500 * time.Millisecond)
	wavetest.MustExec(t, conn, "INSERT INTO t_types (id, k2) VALUES (99, 'new')")
	msgs := readFrom(t, ctx, b, "req", "after", len(typesRows)+2, 3*time.Second)
	if len(msgs) != len(typesRows)+1 || msgs[len(msgs)-1].typ != rowenc.TypeInsert {
		t.Fatalf("after the snapshot the topic holds %d messages, the last %+v: want %d snapshot messages and the insert (did the request run twice?)",
			len(msgs), msgs[len(msgs)-1], len(typesRows))
	}
}

// readKeyed reads want messages of topic and returns them by message key.
func readKeyed(t *testing.T, ctx context.Context, b *memory.Bus, topic string, want int) map[string]received {
	t.Helper()
	msgs := readFrom(t, ctx, b, topic, "keyed", want, 30*time.Second)
	if len(msgs) < want {
		t.Fatalf("read %d messages of %s, want %d", len(msgs), topic, want)
	}
	out := map[string]received{}
	for _, m := range msgs {
		out[m.key] = m
	}
	return out
}

// readFrom reads topic from its start as a new group, in order, until it has want
// messages or wait passed.
func readFrom(t *testing.T, ctx context.Context, b *memory.Bus, topic, group string, want int, wait time.Duration) []received {
	t.Helper()
	for b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1}) != nil {
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: group})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []received
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err = s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		out = append(out, decodeMsg(t, topic, m.Key, m.Value))
		if len(out) >= want {
			return errDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDone) && sctx.Err() == nil {
		t.Fatal(err)
	}
	return out
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// snapshotRows is how many existing rows the kill test snapshots.
func snapshotRows(t testing.TB) int { return volume(200000) }

// TestSnapshotKillRestartIntegration is the snapshot's acceptance on the real MariaDB,
// ZooKeeper and Kafka: 200,000 existing rows (50,000 under -race; make test runs it
// without, as every test of a wave process) across two tables, an instance that
// snapshots them while writes (inserts, updates, deletes) go on, `kill -9` of the wave
// in the middle of the snapshot and a restart. A consumer that applies the topic's
// messages in order ends with exactly the tables' contents.
func TestSnapshotKillRestartIntegration(t *testing.T) {
	t.Parallel() // its own database, topics and ZooKeeper root: beside the other long process tests
	ctx := testenv.Context(t)
	n := snapshotRows(t)
	f := newFaultEnvOn(t, ctx, 31, "snap", testenv.Require(t, testenv.Kafka))
	w := f.w
	for _, table := range []string{tOrders, tItems} {
		for w.nextID[table] <= int64(n/2) {
			w.txn(table, min(1000, n/2+1-int(w.nextID[table])), 0, 0)
		}
	}
	db := regexp.QuoteMeta(w.db)
	topic := f.prefix + ".all"
	f.inst.Start = wavetest.CurrentPos(t)
	f.inst.Subscriptions = []cluster.Subscription{{Name: "all", Topic: topic, Include: []string{db + `\.t_(orders|items)`}}}
	// Paced so that the snapshot takes some seconds, with the writes and the kill in them.
	f.inst.Snapshot = &cluster.SnapshotOptions{Initial: true, ChunkRows: 2000, RowsPerSecond: n / 6}
	f.topics = []string{topic}
	reader := startReader(t, ctx, f.brokers, topic)
	if _, err := cluster.AddInstance(ctx, f.c, f.inst, "wave-1", nil); err != nil {
		t.Fatal(err)
	}
	p1 := wavetest.StartWave(t, "wave-1", f.config("wave-1", f.brokers), f.env)

	// Writes during the snapshot, on both tables, paced to last through it.
	changes := n / 10
	written := make(chan *cluster.Position, 1)
	go func() {
		target := w.count + changes
		for i := 0; w.count < target && ctx.Err() == nil; i++ {
			w.txn([]string{tOrders, tItems}[i%2], 10, 30, 10)
			time.Sleep(5 * time.Millisecond)
		}
		written <- wavetest.CurrentPos(t)
	}()
	snapshot := func() cluster.SnapshotProgress {
		if s := f.offset().Snapshot; s != nil {
			return *s
		}
		return cluster.SnapshotProgress{}
	}
	f.waitFor("a third of the snapshot committed", func() bool { return snapshot().Rows >= int64(n/3) }, p1)
	p1.Kill(t)
	killed := snapshot()
	if killed.Done {
		t.Fatalf("the snapshot was done before the kill: %+v", killed)
	}
	t.Logf("kill -9 with %d snapshot rows committed, tables left %v", killed.Rows, killed.Tables)
	p2 := wavetest.StartWave(t, "wave-1", f.config("wave-1", f.brokers), f.env)

	var end *cluster.Position
	select {
	case end = <-written:
	case <-ctx.Done():
		t.Fatal("the writes did not finish")
	}
	f.waitFor("the snapshot done and the offset past the writes", func() bool {
		o := f.offset()
		return o.Snapshot != nil && o.Snapshot.Done && wavetest.Covers(t, o.GTIDSet, end.GTIDSet)
	}, p2)
	held := f.messages()
	msgs := reader.wait(t, int(sum(held)))

	// Apply the messages in order (per partition, which holds a key's messages in order).
	state := map[string][]byte{}
	snapshotted := 0
	for _, m := range msgs {
		k := m.table + ":" + m.id
		switch m.typ {
		case rowenc.TypeDelete:
			delete(state, k)
		case rowenc.TypeSnapshot:
			snapshotted++
			state[k] = m.data
		default:
			state[k] = m.data
		}
	}
	want := map[string][]byte{}
	conn := wavetest.Connect(t)
	for _, table := range []string{tOrders, tItems} {
		for _, vals := range w.live[table] {
			want[pkOf(table, vals)] = w.image(table, vals)
		}
		// The model is what the table holds: the same keys as a SELECT of it.
		r, err := conn.Execute("SELECT id FROM " + w.db + "." + table)
		if err != nil {
			t.Fatal(err)
		}
		if r.RowNumber() != len(w.live[table]) {
			t.Fatalf("%s holds %d rows, the workload's model %d", table, r.RowNumber(), len(w.live[table]))
		}
		for i := range r.RowNumber() {
			id, _ := r.GetString(i, 0)
			if _, ok := want[table+":"+id]; !ok {
				t.Fatalf("%s holds id %s, which the workload's model lacks", table, id)
			}
		}
	}
	missing, wrong := 0, 0
	for k, data := range want {
		got, ok := state[k]
		switch {
		case !ok:
			if missing++; missing <= 5 {
				t.Errorf("row %s: missing downstream", k)
			}
		case string(got) != string(data):
			if wrong++; wrong <= 5 {
				t.Errorf("row %s: downstream %s, the table %s", k, got, data)
			}
		}
	}
	extra := 0
	for k := range state {
		if _, ok := want[k]; !ok {
			if extra++; extra <= 5 {
				t.Errorf("row %s: downstream, not in the table", k)
			}
		}
	}
	if missing+wrong+extra > 0 {
		t.Fatalf("downstream differs from the tables: %d missing, %d different, %d extra (of %d rows)", missing, wrong, extra, len(want))
	}
	if snapshotted < n/2 {
		t.Errorf("%d snapshot messages for %d existing rows: the snapshot did not do the work", snapshotted, n)
	}
	t.Logf("downstream equals both tables (%d rows) after %d messages (%d snapshot) with a kill -9 at %d snapshot rows",
		len(want), len(msgs), snapshotted, killed.Rows)
}
