package wave_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/memory"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
	"github.com/binlake/binlake/wave/rowenc"
)

// embedded starts a wave on coord/single and the memory bus with inst, and returns the
// bus (to read topics) and the wave.
func embedded(t *testing.T, ctx context.Context, inst *cluster.Instance, maxBytes int) (*memory.Bus, *wave.Wave, string) {
	t.Helper()
	return embeddedOn(t, ctx, singleCoord(t), inst, maxBytes)
}

// singleCoord is a single-node coordinator in the test's temporary folder.
func singleCoord(t *testing.T) coord.Coordinator {
	t.Helper()
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// embeddedOn is embedded on the coordinator c.
func embeddedOn(t *testing.T, ctx context.Context, c coord.Coordinator, inst *cluster.Instance, maxBytes int) (*memory.Bus, *wave.Wave, string) {
	t.Helper()
	b, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pub, _ := b.Publisher()
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-e", nil); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	wv, err := wave.New(wave.Options{Node: "wave-e", HTTPAddr: "127.0.0.1:0", Coord: c, Publisher: pub, Topics: b,
		TopicSpec: bus.TopicSpec{Partitions: 1}, MaxMessageBytes: maxBytes, PollInterval: 100 * time.Millisecond,
		Logger: testLogger(t), Ready: func(a string) { addrc <- a }})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- wv.Run(ctx) }()
	t.Cleanup(func() {
		wv.Close()
		if err := <-errc; err != nil {
			t.Errorf("wave Run: %v", err)
		}
	})
	return b, wv, <-addrc
}

func readBus(t *testing.T, ctx context.Context, b *memory.Bus, topic string, want int) []map[string]any {
	t.Helper()
	for b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1}) != nil {
	}
	s, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: "verify"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []map[string]any
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		out = append(out, decodeMsg(t, topic, m.Key, m.Value).msg)
		if len(out) >= want {
			return errDone
		}
		return nil
	})
	return out
}

// TestWaveDDLIntegration: ALTER TABLE ADD COLUMN (in the middle) and DROP COLUMN between
// rows, then a DROP of two tables. The wave reads all of it after the last DDL ran, so names taken from the current
// schema would be wrong for the earlier rows; the table map's metadata keeps them right.
func TestWaveDDLIntegration(t *testing.T) {
	conn := wavetest.Connect(t)
	w := newWorkload(t, 4) // a unique database; its three tables stay unused here
	wavetest.MustExec(t, conn, "USE "+w.db)
	wavetest.MustExec(t, conn, "CREATE TABLE t_ddl (id INT PRIMARY KEY, a VARCHAR(20), b INT UNSIGNED)")
	start := wavetest.CurrentPos(t)
	wavetest.MustExec(t, conn, "INSERT INTO t_ddl VALUES (1,'one',4294967295),(2,'two',2),(3,NULL,3)")
	wavetest.MustExec(t, conn, "ALTER TABLE t_ddl ADD COLUMN c DECIMAL(10,2) NULL AFTER a")
	wavetest.MustExec(t, conn, "INSERT INTO t_ddl VALUES (4,'four',12.5,4)")
	wavetest.MustExec(t, conn, "UPDATE t_ddl SET c = 1.5 WHERE id = 1")
	wavetest.MustExec(t, conn, "ALTER TABLE t_ddl DROP COLUMN a")
	wavetest.MustExec(t, conn, "INSERT INTO t_ddl VALUES (5,99.99,5)")
	wavetest.MustExec(t, conn, "DELETE FROM t_ddl WHERE id = 2")
	// A multi-table DROP that names the subscribed table second still reaches it.
	wavetest.MustExec(t, conn, "CREATE TABLE t_other (id INT PRIMARY KEY)")
	wavetest.MustExec(t, conn, "DROP TABLE t_other, t_ddl")

	a := testenv.RequireMySQL(t)
	inst := &cluster.Instance{ID: "ddl", Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Start: start, Subscriptions: []cluster.Subscription{{Name: "all", Topic: "ddl.all",
			Include: []string{strings.ReplaceAll(w.db, ".", `\.`) + `\.t_ddl`}, PartitionBy: rowenc.PartitionTable}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, _, _ := embedded(t, ctx, inst, 0)

	want := []string{
		`{"type":"insert","data":{"id":1,"a":"one","b":4294967295}}`,
		`{"type":"insert","data":{"id":2,"a":"two","b":2}}`,
		`{"type":"insert","data":{"id":3,"a":null,"b":3}}`,
		`{"type":"ddl","sql":"ALTER TABLE t_ddl ADD COLUMN c DECIMAL(10,2) NULL AFTER a"}`,
		`{"type":"insert","data":{"id":4,"a":"four","c":"12.50","b":4}}`,
		`{"type":"update","data":{"id":1,"a":"one","c":"1.50","b":4294967295},"old":{"c":null}}`,
		`{"type":"ddl","sql":"ALTER TABLE t_ddl DROP COLUMN a"}`,
		`{"type":"insert","data":{"id":5,"c":"99.99","b":5}}`,
		`{"type":"delete","data":{"id":2,"c":null,"b":2}}`,
		`{"type":"ddl"}`, // the DROP, as the server rewrote it
	}
	got := readBus(t, ctx, b, "ddl.all", len(want))
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d: %v", len(got), len(want), got)
	}
	for i, wj := range want {
		var exp map[string]any
		json.Unmarshal([]byte(wj), &exp)
		g := got[i]
		for k, v := range exp {
			if !reflect.DeepEqual(normalize(g[k]), normalize(v)) {
				t.Errorf("message %d: %s = %v, want %v (message %v)", i, k, g[k], v, g)
			}
		}
		if sql, _ := g["sql"].(string); i == len(want)-1 && !strings.Contains(sql, "t_other") {
			t.Errorf("message %d: sql %q, want the DROP of t_other and t_ddl", i, sql)
		}
		if g["table"] != "t_ddl" || g["database"] != w.db {
			t.Errorf("message %d: table %v.%v", i, g["database"], g["table"])
		}
	}
}

// normalize makes json.Number and float64 comparable.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}

// TestWavePurgedBinlogIntegration: a start position the source no longer has (error 1236)
// puts the instance in the error state (status, metric, coordinator), never a silent skip.
func TestWavePurgedBinlogIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	inst := &cluster.Instance{ID: "gone", Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Start:         &cluster.Position{File: "binlog.999999", Pos: 4},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "gone.all"}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, wv, addr := embedded(t, ctx, inst, 0)
	for {
		st := wv.Status()
		if len(st) == 1 && st[0].State == cluster.StateError {
			if !strings.Contains(st[0].Error, "1236") {
				t.Errorf("error %q does not name error 1236", st[0].Error)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("instance never entered the error state: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v := metricValue(wavetest.HTTPGet(t, "http://"+addr+"/metrics"), `binlake_wave_instance_error{instance="gone"}`); v != 1 {
		t.Errorf("binlake_wave_instance_error = %v, want 1", v)
	}
	if body := wavetest.HTTPGet(t, "http://"+addr+"/status"); !strings.Contains(body, `"state":"error"`) {
		t.Errorf("/status = %s", body)
	}
}

// TestWaveTooLargeIntegration: a row larger than the sink accepts stops the instance by
// default, and is skipped and counted with on_too_large: skip.
func TestWaveTooLargeIntegration(t *testing.T) {
	conn := wavetest.Connect(t)
	w := newWorkload(t, 5)
	wavetest.MustExec(t, conn, "USE "+w.db)
	wavetest.MustExec(t, conn, "CREATE TABLE t_big (id INT PRIMARY KEY, body MEDIUMTEXT)")
	start := wavetest.CurrentPos(t)
	wavetest.MustExec(t, conn, "INSERT INTO t_big VALUES (1, 'small')")
	wavetest.MustExec(t, conn, "INSERT INTO t_big VALUES (2, REPEAT('x', 5000))")
	wavetest.MustExec(t, conn, "INSERT INTO t_big VALUES (3, 'small again')")
	a := testenv.RequireMySQL(t)
	for _, mode := range []string{cluster.TooLargeStop, cluster.TooLargeSkip} {
		t.Run(mode, func(t *testing.T) {
			inst := &cluster.Instance{ID: "big-" + mode, OnTooLarge: mode, Start: start,
				Source: cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
				Subscriptions: []cluster.Subscription{{Name: "all", Topic: "big." + mode,
					Include: []string{strings.ReplaceAll(w.db, ".", `\.`) + `\.t_big`}}}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, wv, addr := embedded(t, ctx, inst, 2000)
			if mode == cluster.TooLargeSkip {
				got := readBus(t, ctx, b, "big.skip", 2)
				if len(got) != 2 || normalize(got[0]["pk"]).(map[string]any)["id"] != 1.0 || normalize(got[1]["pk"]).(map[string]any)["id"] != 3.0 {
					t.Fatalf("got %v, want rows 1 and 3", got)
				}
				if v := metricValue(wavetest.HTTPGet(t, "http://"+addr+"/metrics"), `binlake_wave_messages_skipped_total{instance="big-skip"}`); v != 1 {
					t.Errorf("skipped = %v, want 1", v)
				}
				return
			}
			for {
				st := wv.Status()
				if len(st) == 1 && st[0].State == cluster.StateError {
					if !strings.Contains(st[0].Error, "larger than the sink accepts") {
						t.Errorf("error %q", st[0].Error)
					}
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("instance never stopped: %+v", st)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestWaveStatementDMLIntegration: a row change of a subscribed table logged as a
// statement (binlog_format STATEMENT) stops the instance by default, in the error state
// with reason statement_dml, naming the table; with on_unreadable: skip the rows around
// it are published and it is counted.
func TestWaveStatementDMLIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, _ := testenv.ScratchDatabase(t, "fixc_wave_stmt")
	exec("USE " + db)
	exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
	start := wavetest.CurrentPos(t)
	exec("INSERT INTO t VALUES (1, 'row')")
	exec("SET SESSION binlog_format = STATEMENT")
	exec("INSERT INTO t VALUES (2, 'statement')")
	exec("SET SESSION binlog_format = ROW")
	exec("INSERT INTO t VALUES (3, 'row')")
	for _, mode := range []string{cluster.UnreadableStop, cluster.UnreadableSkip} {
		t.Run(mode, func(t *testing.T) {
			inst := &cluster.Instance{ID: "stmt-" + mode, OnUnreadable: mode, Start: start,
				Source:        cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
				Subscriptions: []cluster.Subscription{{Name: "all", Topic: "stmt." + mode, Include: []string{db + `\.t`}}}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, wv, addr := embedded(t, ctx, inst, 0)
			if mode == cluster.UnreadableSkip {
				got := readBus(t, ctx, b, "stmt.skip", 2)
				if len(got) != 2 || normalize(got[0]["pk"]).(map[string]any)["id"] != 1.0 || normalize(got[1]["pk"]).(map[string]any)["id"] != 3.0 {
					t.Fatalf("got %v, want rows 1 and 3", got)
				}
				if v := metricValue(wavetest.HTTPGet(t, "http://"+addr+"/metrics"), `binlake_wave_unreadable_skipped_total{instance="stmt-skip"}`); v != 1 {
					t.Errorf("unreadable skipped = %v, want 1", v)
				}
				return
			}
			for {
				st := wv.Status()
				if len(st) == 1 && st[0].State == cluster.StateError {
					if st[0].Reason != wave.ReasonStatementDML || !strings.Contains(st[0].Error, db+".t") || !strings.Contains(st[0].Error, "binlog_format=ROW") {
						t.Errorf("reason %q, error %q", st[0].Reason, st[0].Error)
					}
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("instance never stopped: %+v", st)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if body := wavetest.HTTPGet(t, "http://"+addr+"/metrics"); !strings.Contains(body, `reason="statement_dml"`) {
				t.Errorf("no instance_running series with reason statement_dml")
			}
		})
	}
}
