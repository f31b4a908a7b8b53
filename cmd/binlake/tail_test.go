//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
	"github.com/binlake/binlake/wave/sink"
)

// TestTailArgs: what tail cannot do with its arguments is said before anything is read,
// naming the flag and what it wants.
func TestTailArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"-from", "beginning", "-file", "x"}, `tail: -from "beginning": want start, end, an offset (42), -N for the last N messages of each partition, or a time (2026-11-29T14:00:00Z)`},
		{[]string{"-o", "yaml", "-file", "x"}, `tail: -o: output "yaml": want pretty, json or line`},
		{[]string{"-format", "avro", "-file", "x"}, `tail: -format: format "avro": want auto, json, canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf`},
		{[]string{"-n", "-1", "-file", "x"}, "tail: -n -1: want 0 (no limit) or more"},
		{[]string{"-partition", "a", "-file", "x"}, `tail: -partition "a": want partition numbers (0, 1, …), comma-separated`},
		{[]string{"orders"}, "tail orders: which coordinator holds the instance? give -config wave.yaml or -zk host:port (a topic by its name: -topic orders; binlake up's rows: -file data/rows.jsonl)"},
		{[]string{"orders", "-topic", "t"}, "tail: give an instance (orders) or -topic, not both"},
		{[]string{"local", "-file", "data/rows.jsonl"}, "tail: -file data/rows.jsonl reads the whole file: drop the instance name local (lines of one topic: -topic; the topic of local: with -config wave.yaml or -zk)"},
		{[]string{"orders", "extra"}, `tail: one instance at a time: "extra" is extra`},
		{[]string{"-file", "x", "-brokers", "k:9092"}, "tail: give one of -file and -brokers"},
		{[]string{"-topic", "t"}, "tail: where are the messages? give -brokers (Kafka), -config wave.yaml or -file"},
		{[]string{"-topic", "t", "-config", "w.yaml", "-brokers", "k:9092"}, "tail: -config takes the Kafka cluster from its sink.kafka section: drop -brokers"},
		{[]string{"-topic", "t", "-tls"}, "tail: -tls goes with -brokers"},
		{[]string{"-topic", "t", "-brokers", "k:9092", "-sasl-user", "u"}, "tail: SASL needs -sasl-mechanism and -sasl-user (and -sasl-password-file or BINLAKE_KAFKA_PASSWORD)"},
		{[]string{"orders", "-zk", "zk:2181", "-zk-user", "u"}, "tail: -zk-user u: give -zk-password-file or set BINLAKE_ZK_PASSWORD"},
	} {
		var out bytes.Buffer
		err := runTail(context.Background(), tc.args, &out, &out)
		got := ""
		if errors.Is(err, errUsage) {
			got = "usage"
		} else if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("tail %q: %v; want %s (printed %q)", tc.args, err, tc.want, out.String())
		}
	}
}

// TestTailRowsFile: tail -file reads what binlake up's file sink wrote (the wave's row
// messages, on their topics), one topic or all, in each output mode's form.
func TestTailRowsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), RowsFile)
	w, err := sink.OpenFile(sink.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tb := &rowenc.Table{Database: "shop", Name: "orders", PK: []int{0},
		Columns: []rowenc.Column{{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true}, {Name: "v", Type: mysql.MYSQL_TYPE_VARCHAR}}}
	tb.Prepare()
	m := rowenc.Meta{Instance: "local", TS: 1764424800, GTID: "0-1-7"}
	last := m
	last.Commit, last.XID = true, 9
	row := func(topic, typ string, meta rowenc.Meta, before, after []any) bus.Message {
		v, err := rowenc.EncodeRow(nil, tb, typ, meta, before, after)
		if err != nil {
			t.Fatal(err)
		}
		img := after
		if img == nil {
			img = before
		}
		return bus.Message{Topic: topic, Key: rowenc.AppendKey(nil, tb, rowenc.PartitionPK, img), Value: v}
	}
	if err := w.Publish(context.Background(),
		row("binlake.rows", rowenc.TypeInsert, m, nil, []any{int32(1), "a"}),
		row("audit", rowenc.TypeUpdate, m, []any{int32(1), "a"}, []any{int32(1), "b"}),
		row("binlake.rows", rowenc.TypeUpdate, last, []any{int32(1), "a"}, []any{int32(1), "b"})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-file", path, "-o", "line"}, `binlake.rows 0:0 2025-11-29T14:00:00Z local insert shop.orders {"id":1} {"id":1,"v":"a"} gtid 0-1-7
audit 0:1 2025-11-29T14:00:00Z local update shop.orders {"id":1} v: "a" → "b" gtid 0-1-7
binlake.rows 0:2 2025-11-29T14:00:00Z local update shop.orders {"id":1} v: "a" → "b" gtid 0-1-7 xid 9 commit
`},
		{[]string{"-file", path, "-topic", "binlake.rows", "-from", "1", "-o", "json"}, `{"topic":"binlake.rows","partition":0,"offset":2,"key":"shop.orders:[1]","format":"json","message":{"instance":"local","database":"shop","table":"orders","type":"update","ts":1764424800,"gtid":"0-1-7","file":"","pos":0,"xid":9,"commit":true,"pk":{"id":1},"data":{"id":1,"v":"b"},"old":{"v":"a"}}}
`},
		{[]string{"-file", path, "-topic", "audit", "-from", "start"}, `topic audit partition 0 offset 1 key shop.orders:[1] format json
{
  "instance": "local",
  "database": "shop",
  "table": "orders",
  "type": "update",
  "ts": 1764424800,
  "gtid": "0-1-7",
  "file": "",
  "pos": 0,
  "commit": false,
  "pk": {
    "id": 1
  },
  "data": {
    "id": 1,
    "v": "b"
  },
  "old": {
    "v": "a"
  }
}
`},
		{[]string{"-file", path, "-from", "-1", "-o", "line"}, `binlake.rows 0:2 2025-11-29T14:00:00Z local update shop.orders {"id":1} v: "a" → "b" gtid 0-1-7 xid 9 commit
`},
		{[]string{"-file", path, "-from", "start", "-n", "1", "-o", "line"}, `binlake.rows 0:0 2025-11-29T14:00:00Z local insert shop.orders {"id":1} {"id":1,"v":"a"} gtid 0-1-7
`},
	} {
		var out, errb bytes.Buffer
		if err := runTail(context.Background(), tc.args, &out, &errb); err != nil || errb.Len() > 0 || out.String() != tc.want {
			t.Errorf("tail %q: %v %s; printed:\n%s\nwant:\n%s", tc.args, err, errb.String(), out.String(), tc.want)
		}
	}
	// A topic none of the file's lines has (a typo, or nothing written yet) is said; it
	// printed nothing at all, where Kafka says "unknown topic".
	var out, errb bytes.Buffer
	if err := runTail(context.Background(), []string{"-file", path, "-topic", "binlake.row"}, &out, &errb); err != nil || out.Len() > 0 ||
		errb.String() != "binlake tail: no message of topic binlake.row in "+path+" (-from -10)\n" {
		t.Errorf("tail -topic binlake.row: %v, printed %q, said %q; want it said that no message has that topic", err, out.String(), errb.String())
	}
	// An offset past the file's end is said too; it printed nothing and exited 0.
	out.Reset()
	errb.Reset()
	if err := runTail(context.Background(), []string{"-file", path, "-from", "99"}, &out, &errb); err != nil || out.Len() > 0 ||
		errb.String() != "binlake tail: no message in "+path+" from -from 99 (the file ends before it, or is empty)\n" {
		t.Errorf("tail -from 99: %v, printed %q, said %q; want it said that the file ends before", err, out.String(), errb.String())
	}
}

// TestTailRowsFileBinaryFormats: tail -file reads back the messages of the binary formats
// (protobuf, canal-protobuf) a file sink wrote as they were published, and a tombstone as
// one: the sink once wrote them as JSON strings, their invalid UTF-8 replaced, which no
// format could decode.
func TestTailRowsFileBinaryFormats(t *testing.T) {
	path := filepath.Join(t.TempDir(), RowsFile)
	w, err := sink.OpenFile(sink.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var msgs []bus.Message
	for _, format := range []string{rowenc.FormatProtobuf, rowenc.FormatCanalProtobuf} {
		golden, err := os.ReadFile(filepath.Join("..", "..", "wave", "rowenc", "testdata", format+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := bytes.Cut(golden, []byte("\n"))
		name, h, _ := bytes.Cut(first, []byte("\t"))
		v, err := hex.DecodeString(string(h))
		if err != nil || string(name) != rowenc.TypeInsert {
			t.Fatalf("%s.golden: first line %.40q (%v), want an insert", format, first, err)
		}
		msgs = append(msgs, bus.Message{Topic: format, Key: []byte("shop.kinds:[1]"), Value: v})
	}
	msgs = append(msgs, bus.Message{Topic: "debezium", Key: []byte(`{"id":1}`)})
	if err := w.Publish(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := runTail(context.Background(), []string{"-file", path, "-from", "start", "-o", "json"}, &out, &errb); err != nil || errb.Len() > 0 {
		t.Fatalf("tail: %v %s", err, errb.String())
	}
	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("printed %d lines, want 3:\n%s", len(lines), out.String())
	}
	for i, want := range []string{`"topic":"protobuf","partition":0,"offset":0,"key":"shop.kinds:[1]","format":"protobuf","message":{`,
		`"topic":"canal-protobuf","partition":0,"offset":1,"key":"shop.kinds:[1]","format":"canal-protobuf","message":{`,
		`{"topic":"debezium","partition":0,"offset":2,"key":"{\"id\":1}","tombstone":true}`} {
		if !bytes.Contains(lines[i], []byte(want)) {
			t.Errorf("line %d: %s\nwant it to hold %s", i, lines[i], want)
		}
	}
}

// TestTailConfigFileSink: with a wave.yaml whose sink is a file, tail INSTANCE reads the
// instance's topic from the coordinator the config names and shows that topic's rows of
// that instance only; a stdout sink has nothing to read back.
func TestTailConfigFileSink(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "wave.yaml")
	rows := filepath.Join(dir, "rows.jsonl")
	writeFile := func(sinkSection string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("node: wave-1\ncoordinator: {kind: single, path: "+filepath.Join(dir, "coord.json")+"}\n"+sinkSection), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeFile("sink: {kind: file, file: {path: " + rows + "}}\n")
	ctx := context.Background()
	c, _, err := Open(ctx, config.Coordinator{Kind: config.CoordSingle, Path: filepath.Join(dir, "coord.json")}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	inst := &cluster.Instance{ID: "orders", Source: cluster.Source{Addr: "127.0.0.1:3307", User: "u", Flavor: cluster.FlavorMariaDB, ServerID: 9},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "shop.rows"}, {Name: "audit", Topic: "shop.audit", Events: []string{rowenc.TypeDelete}}}}
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-1", nil); err != nil {
		t.Fatal(err)
	}
	c.Close()

	w, err := sink.OpenFile(sink.FileOptions{Path: rows})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	msg := func(topic, instance string, id int) bus.Message {
		return bus.Message{Topic: topic, Key: []byte("k"), Value: []byte(fmt.Sprintf(
			`{"instance":%q,"database":"shop","table":"t","type":"delete","ts":0,"commit":true,"pk":{"id":%d},"data":{"id":%d}}`, instance, id, id))}
	}
	if err := w.Publish(ctx, msg("shop.rows", "orders", 1), msg("shop.audit", "orders", 2), msg("shop.rows", "billing", 3), msg("shop.rows", "orders", 4)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target, want, err string
	}{
		// The topic begins each line, the instance's one topic too (as -file's several).
		{"orders/all", "shop.rows 0:0 1970-01-01T00:00:00Z orders delete shop.t {\"id\":1} {\"id\":1} commit\nshop.rows 0:3 1970-01-01T00:00:00Z orders delete shop.t {\"id\":4} {\"id\":4} commit\n", ""},
		{"orders/audit", "shop.audit 0:1 1970-01-01T00:00:00Z orders delete shop.t {\"id\":2} {\"id\":2} commit\n", ""},
		{"orders", "", "tail: instance orders publishes to 2 topics: name one subscription, as orders/NAME: all (→ shop.rows), audit (→ shop.audit)"},
		{"nosuch", "", "tail: instance nosuch: not found"},
	} {
		var out, errb bytes.Buffer
		err := runTail(ctx, []string{tc.target, "-config", cfg, "-from", "start", "-o", "line"}, &out, &errb)
		if got := fmt.Sprint(err); tc.err != "" && got != tc.err || tc.err == "" && (err != nil || out.String() != tc.want) {
			t.Errorf("tail %s: %v; printed:\n%s\nwant %q:\n%s", tc.target, err, out.String(), tc.err, tc.want)
		}
	}

	writeFile("sink: {kind: stdout}\n")
	err = runTail(ctx, []string{"orders/all", "-config", cfg}, io.Discard, io.Discard)
	if want := "tail: " + cfg + ": sink stdout: its rows went to the wave's stdout, there is nothing to read back"; fmt.Sprint(err) != want {
		t.Errorf("stdout sink: %v, want %s", err, want)
	}
}

// TestTailStdin: -file - reads the rows binlake up --rows - writes, piped in, from the
// start by default; -from -N, which needs the stream's end, is refused by name.
func TestTailStdin(t *testing.T) {
	var rows bytes.Buffer
	w := sink.New(&rows)
	for i := range 3 {
		if err := w.Publish(context.Background(), bus.Message{Topic: DefaultRowsTopic, Key: []byte("k"), Value: []byte(fmt.Sprintf(
			`{"instance":"local","database":"d","table":"t","type":"insert","ts":0,"commit":%v,"pk":{"id":%d},"data":{"id":%d}}`, i == 2, i, i))}); err != nil {
			t.Fatal(err)
		}
	}
	defer func(r io.Reader) { tailStdin = r }(tailStdin)
	tailStdin = bytes.NewReader(rows.Bytes())
	var out, errb bytes.Buffer
	err := runTail(context.Background(), []string{"-file", "-", "-o", "line"}, &out, &errb)
	want := DefaultRowsTopic + ` 0:0 1970-01-01T00:00:00Z local insert d.t {"id":0} {"id":0}
` + DefaultRowsTopic + ` 0:1 1970-01-01T00:00:00Z local insert d.t {"id":1} {"id":1}
` + DefaultRowsTopic + ` 0:2 1970-01-01T00:00:00Z local insert d.t {"id":2} {"id":2} commit
`
	if err != nil || errb.Len() > 0 || out.String() != want {
		t.Errorf("tail -file -: %v %s; printed:\n%s\nwant:\n%s", err, errb.String(), out.String(), want)
	}
	tailStdin = bytes.NewReader(rows.Bytes())
	err = runTail(context.Background(), []string{"-file", "-", "-from", "-2"}, io.Discard, io.Discard)
	if want := "tail: read stdin: not supported: a stream has no end to count back from and keeps no publish time per line; start from the start or a line number (offset)"; fmt.Sprint(err) != want {
		t.Errorf("tail -file - -from -2: %v, want %s", err, want)
	}
}
