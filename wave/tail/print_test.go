package tail_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/tail"
)

// oddMessages are what a topic may hold besides row messages: bytes that are not JSON
// (with a key that would break a terminal), another format's JSON, and a tombstone (the
// nil value debezium-json sends after a delete).
func oddMessages() []bus.Message {
	return []bus.Message{
		{Topic: "x", Partition: 1, Offset: 5, Key: []byte("k\x1b"), Value: []byte("hello\x00\xff")},
		{Topic: "x", Partition: 1, Offset: 6, Value: []byte(`{"database":"shop","table":"orders","type":"INSERT","data":[{"id":"1"}]}`)},
		{Topic: "x", Partition: 1, Offset: 7, Key: []byte(`{"id":9}`)},
	}
}

func printAll(t *testing.T, p *tail.Printer, msgs []bus.Message) string {
	t.Helper()
	var b bytes.Buffer
	p.W = &b
	for _, m := range msgs {
		if _, err := p.Print(m); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestPrintModes pins what each -o mode prints for the wave's messages (a transaction's
// insert, update and delete, the last with commit, then a ddl) and for messages that are
// not row messages.
func TestPrintModes(t *testing.T) {
	msgs := append(sampleMessages(t), oddMessages()...)
	for _, tc := range []struct{ mode, want string }{
		{tail.Line, `binlake.rows 0:0 2025-11-29T14:00:00Z orders insert shop.orders {"id":7} {"id":7,"amount":"1.50","note":"ü <new>"} gtid 0-1-202
binlake.rows 0:1 2025-11-29T14:00:00Z orders update shop.orders {"id":8} amount: "2.00" → "2.50", note: "a" → "b" gtid 0-1-202
binlake.rows 0:2 2025-11-29T14:00:00Z orders delete shop.orders {"id":9} {"id":9,"amount":"3.00","note":null} gtid 0-1-202 xid 88 commit
binlake.rows 0:3 2025-11-29T14:00:01Z orders ddl shop.orders "ALTER TABLE orders\n  ADD c INT" gtid 0-1-203 commit
x 1:5 not a row message (json: not a JSON object; nor canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf), 7 bytes: "hello\x00\xff"
x 1:6 not a row message (json: no "instance" field; nor canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf), 72 bytes: {"database":"shop","table":"orders","type":"INSERT","data":[{"id":"1"}]}
x 1:7 tombstone key {"id":9}
`},
		{tail.JSON, `{"topic":"binlake.rows","partition":0,"offset":0,"time":"2026-11-29T14:00:00.123Z","key":"shop.orders:[7]","format":"json","message":{"instance":"orders","database":"shop","table":"orders","type":"insert","ts":1764424800,"gtid":"0-1-202","file":"bin.000001","pos":1234,"commit":false,"pk":{"id":7},"data":{"id":7,"amount":"1.50","note":"ü <new>"}}}
{"topic":"binlake.rows","partition":0,"offset":1,"time":"2026-11-29T14:00:00.124Z","key":"shop.orders:[8]","format":"json","message":{"instance":"orders","database":"shop","table":"orders","type":"update","ts":1764424800,"gtid":"0-1-202","file":"bin.000001","pos":1234,"commit":false,"pk":{"id":8},"data":{"id":8,"amount":"2.50","note":"b"},"old":{"amount":"2.00","note":"a"}}}
{"topic":"binlake.rows","partition":0,"offset":2,"time":"2026-11-29T14:00:00.125Z","key":"shop.orders:[9]","format":"json","message":{"instance":"orders","database":"shop","table":"orders","type":"delete","ts":1764424800,"gtid":"0-1-202","file":"bin.000001","pos":1234,"xid":88,"commit":true,"pk":{"id":9},"data":{"id":9,"amount":"3.00","note":null}}}
{"topic":"binlake.rows","partition":0,"offset":3,"time":"2026-11-29T14:00:00.126Z","key":"shop.orders","format":"json","message":{"instance":"orders","database":"shop","table":"orders","type":"ddl","ts":1764424801,"gtid":"0-1-203","file":"bin.000001","pos":1500,"commit":true,"sql":"ALTER TABLE orders\n  ADD c INT"}}
{"topic":"x","partition":1,"offset":5,"key":"k\u001b","error":"json: not a JSON object; nor canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf","message_base64":"aGVsbG8A/w=="}
{"topic":"x","partition":1,"offset":6,"error":"json: no \"instance\" field; nor canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf","message":{"database":"shop","table":"orders","type":"INSERT","data":[{"id":"1"}]}}
{"topic":"x","partition":1,"offset":7,"key":"{\"id\":9}","tombstone":true}
`},
		{tail.Pretty, `topic binlake.rows partition 0 offset 0 time 2026-11-29T14:00:00.123Z key shop.orders:[7] format json
{
  "instance": "orders",
  "database": "shop",
  "table": "orders",
  "type": "insert",
  "ts": 1764424800,
  "gtid": "0-1-202",
  "file": "bin.000001",
  "pos": 1234,
  "commit": false,
  "pk": {
    "id": 7
  },
  "data": {
    "id": 7,
    "amount": "1.50",
    "note": "ü <new>"
  }
}
topic binlake.rows partition 0 offset 1 time 2026-11-29T14:00:00.124Z key shop.orders:[8] format json
{
  "instance": "orders",
  "database": "shop",
  "table": "orders",
  "type": "update",
  "ts": 1764424800,
  "gtid": "0-1-202",
  "file": "bin.000001",
  "pos": 1234,
  "commit": false,
  "pk": {
    "id": 8
  },
  "data": {
    "id": 8,
    "amount": "2.50",
    "note": "b"
  },
  "old": {
    "amount": "2.00",
    "note": "a"
  }
}
topic binlake.rows partition 0 offset 2 time 2026-11-29T14:00:00.125Z key shop.orders:[9] format json
{
  "instance": "orders",
  "database": "shop",
  "table": "orders",
  "type": "delete",
  "ts": 1764424800,
  "gtid": "0-1-202",
  "file": "bin.000001",
  "pos": 1234,
  "xid": 88,
  "commit": true,
  "pk": {
    "id": 9
  },
  "data": {
    "id": 9,
    "amount": "3.00",
    "note": null
  }
}
topic binlake.rows partition 0 offset 3 time 2026-11-29T14:00:00.126Z key shop.orders format json
{
  "instance": "orders",
  "database": "shop",
  "table": "orders",
  "type": "ddl",
  "ts": 1764424801,
  "gtid": "0-1-203",
  "file": "bin.000001",
  "pos": 1500,
  "commit": true,
  "sql": "ALTER TABLE orders\n  ADD c INT"
}
topic x partition 1 offset 5 key "k\x1b" not a row message (json: not a JSON object; nor canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf), 7 bytes:
"hello\x00\xff"
topic x partition 1 offset 6 not a row message (json: no "instance" field; nor canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf), 72 bytes:
{
  "database": "shop",
  "table": "orders",
  "type": "INSERT",
  "data": [
    {
      "id": "1"
    }
  ]
}
topic x partition 1 offset 7 key {"id":9} tombstone (no value)
`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			got := printAll(t, &tail.Printer{Mode: tc.mode, Format: tail.Auto}, msgs)
			if got != tc.want {
				t.Errorf("-o %s printed:\n%s\nwant:\n%s", tc.mode, got, tc.want)
			}
		})
	}
}

// TestPrintTopicAndInstance: each line names its message's topic, whatever was read;
// Instance skips the rows of other instances but shows what names none.
func TestPrintTopicAndInstance(t *testing.T) {
	msgs := sampleMessages(t)[:1]
	other := bytes.Replace(msgs[0].Value, []byte(`"instance":"orders"`), []byte(`"instance":"billing"`), 1)
	msgs = append(msgs, bus.Message{Topic: "binlake.rows", Offset: 1, Value: other})
	msgs = append(msgs, oddMessages()[0])
	p := &tail.Printer{Mode: tail.Line, Format: tail.Auto, Instance: "orders"}
	var printed []bool
	var b bytes.Buffer
	p.W = &b
	for _, m := range msgs {
		ok, err := p.Print(m)
		if err != nil {
			t.Fatal(err)
		}
		printed = append(printed, ok)
	}
	want := `binlake.rows 0:0 2025-11-29T14:00:00Z orders insert shop.orders {"id":7} {"id":7,"amount":"1.50","note":"ü <new>"} gtid 0-1-202
x 1:5 not a row message (json: not a JSON object; nor canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf), 7 bytes: "hello\x00\xff"
`
	if b.String() != want || printed[0] != true || printed[1] != false || printed[2] != true {
		t.Errorf("printed %v:\n%s\nwant [true false true]:\n%s", printed, b.String(), want)
	}
}

// TestDecodeRejects: JSON that is close to a row message but not one is not taken for
// one, and the reason names what is missing or wrong.
func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct{ value, err string }{
		{``, "json: not a JSON object"},
		{`[1]`, "json: not a JSON object"},
		{`{"instance":"o"`, "json: unexpected end of JSON input"},
		{`{"instance":"o","database":"d","table":"t","type":"insert","ts":1}`, `json: no "commit" field`},
		{`{"instance":"o","database":"d","table":"t","type":"INSERT","ts":1,"commit":true,"data":{}}`, `json: type "INSERT": want insert, update, delete, snapshot or ddl`},
		{`{"instance":"o","database":"d","table":"t","type":"insert","ts":1,"commit":true}`, `json: type insert without a "data" object`},
		{`{"instance":"o","database":"d","table":"t","type":"ddl","ts":1,"commit":true}`, `json: a ddl without its "sql"`},
		{`{"instance":"o","database":"d","table":"t","type":"update","ts":1,"commit":true,"data":{},"old":[]}`, `json: "old" is not an object`},
		{`{"instance":"o","database":"d","table":"t","type":"delete","ts":1,"commit":true,"data":{},"pk":7}`, `json: "pk" is neither an object nor null`},
		{`{"instance":7,"database":"d","table":"t","type":"insert","ts":1,"commit":true,"data":{}}`, "json: json: cannot unmarshal number into Go struct field"},
	} {
		d := tail.Decode([]byte(tc.value), tail.Auto)
		if d.Format != "" || d.Err == nil || !strings.HasPrefix(d.Err.Error(), tc.err) {
			t.Errorf("Decode(%s) = format %q, err %v; want none, %q", tc.value, d.Format, d.Err, tc.err)
		}
	}
	// A newer wave's extra field does not make a row message unreadable.
	d := tail.Decode([]byte(`{"instance":"o","database":"d","table":"t","type":"insert","ts":1,"commit":false,"data":{"a":1},"lsn":9}`), "json")
	if d.Format != "json" || string(d.Row.Data) != `{"a":1}` {
		t.Errorf("extra field: %+v", d)
	}
	if err := tail.CheckFormat("avro"); err == nil || err.Error() != `format "avro": want auto, json, canal-json, maxwell-json, debezium-json, protobuf, canal-protobuf` {
		t.Errorf("CheckFormat(avro) = %v", err)
	}
}

// TestUpdateWithoutChange: an update whose old is empty says so.
func TestUpdateWithoutChange(t *testing.T) {
	m := bus.Message{Value: []byte(`{"instance":"o","database":"d","table":"t t","type":"update","ts":0,"commit":true,"pk":null,"data":{"a b":1},"old":{}}`)}
	n := bus.Message{Offset: 1, Value: []byte(`{"instance":"o","database":"d","table":"t","type":"update","ts":0,"commit":false,"pk":{"a b":1},"data":{"x":1},"old":{"a b":0,"x":0}}`)}
	got := printAll(t, &tail.Printer{Mode: tail.Line, Format: tail.Auto}, []bus.Message{m, n})
	want := `0:0 1970-01-01T00:00:00Z o update "d.t t" - (no column changed) commit
0:1 1970-01-01T00:00:00Z o update d.t {"a b":1} "a b": 0 → ?, x: 0 → 1
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// FuzzPrint: whatever a message holds, no mode panics, each prints whole lines of
// printable text (line: exactly one), and json prints valid JSON.
func FuzzPrint(f *testing.F) {
	for _, m := range append(sampleMessages(f), oddMessages()...) {
		f.Add(m.Key, m.Value)
	}
	f.Add([]byte("k"), []byte(`{"instance":"\u2028","database":"\u001b[31m","table":"t","type":"update","ts":-62135596801,"commit":true,"pk":{},"data":{"\n":1},"old":{"\n":"\u0000"}}`))
	f.Add([]byte(nil), []byte(`{"instance":"o","database":"d","table":"t","type":"ddl","ts":9223372036854775807,"commit":true,"sql":"\u202e"}`))
	// The peer formats (peers.go).
	f.Add([]byte("k"), []byte(`{"data":[{"id":"1","n":"\u00ff"}],"database":"d","es":1000,"gtid":"","id":4,"isDdl":false,"old":[{"n":null}],"pkNames":["id"],"table":"t","type":"UPDATE"}`))
	f.Add([]byte("k"), []byte(`{"database":"d","table":"t","type":"bootstrap-insert","ts":1,"xid":2,"commit":true,"data":{"id":1,"s":["a"]}}`))
	f.Add([]byte("k"), []byte(`{"schema":{},"payload":{"before":{"id":1,"n":"a"},"after":{"id":1,"n":"b"},"source":{"name":"o","db":"d","table":"t","ts_ms":5},"op":"u"}}`))
	// The protobuf formats (protobuf.go): their golden messages.
	for _, format := range []string{"protobuf", "canal-protobuf"} {
		golden, err := os.ReadFile("../rowenc/testdata/" + format + ".golden")
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
			_, h, _ := strings.Cut(line, "\t")
			if v, err := hex.DecodeString(h); err == nil {
				f.Add([]byte("k"), v)
			}
		}
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		checkPrinted(t, bus.Message{Topic: "t\n", Key: key, Value: value, Partition: 2, Offset: 9})
	})
}

// FuzzRowMessage is FuzzPrint on row messages: the contract's fields with any content,
// so that the summary of updates, ddl and odd names is explored too.
func FuzzRowMessage(f *testing.F) {
	f.Add("orders", "shop", "update", "0-1-2", "", int64(1764424800), []byte(`{"id":1,"n":"b"}`), []byte(`{"n":"a"}`))
	f.Add("o", "d\u202e", "ddl", "", "DROP TABLE t\n", int64(-1), []byte(nil), []byte(nil))
	f.Add("o", "d", "insert", "", "", int64(0), []byte(`{"\u2028":"\ud83d\ude00"}`), []byte(nil))
	f.Fuzz(func(t *testing.T, instance, db, typ, gtid, sql string, ts int64, data, old []byte) {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		pk := "null"
		if len(old) > 0 {
			pk = string(old)
		}
		v := `{"instance":` + q(instance) + `,"database":` + q(db) + `,"table":"t","type":` + q(typ) +
			`,"ts":` + strconv.FormatInt(ts, 10) + `,"gtid":` + q(gtid) + `,"commit":true,"sql":` + q(sql) + `,"pk":` + pk
		if len(data) > 0 {
			v += `,"data":` + string(data)
		}
		if len(old) > 0 {
			v += `,"old":` + string(old)
		}
		checkPrinted(t, bus.Message{Topic: "t", Key: []byte(db), Value: []byte(v + "}")})
	})
}

// checkPrinted prints m in every mode: whole lines of printable UTF-8 text (line: one;
// json: one JSON object), and no panic.
func checkPrinted(t *testing.T, m bus.Message) {
	t.Helper()
	for _, mode := range []string{tail.Pretty, tail.JSON, tail.Line} {
		var b bytes.Buffer
		p := &tail.Printer{W: &b, Mode: mode, Format: tail.Auto}
		if _, err := p.Print(m); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasSuffix(out, "\n") || !utf8.ValidString(out) {
			t.Fatalf("-o %s: %q is not whole lines of UTF-8", mode, out)
		}
		if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && !unicode.IsGraphic(r) }); i >= 0 {
			t.Fatalf("-o %s: unprintable %q at %d in %q", mode, out[i:i+1], i, out)
		}
		switch mode {
		case tail.Line:
			if want := 1 + len(tail.Decode(m.Value, tail.Auto).Row.Grouped); strings.Count(out, "\n") != want {
				t.Fatalf("-o line printed %d lines, want %d (one a row): %q", strings.Count(out, "\n"), want, out)
			}
		case tail.JSON:
			if strings.Count(out, "\n") != 1 || !json.Valid([]byte(out)) {
				t.Fatalf("-o json printed no one JSON line: %q", out)
			}
		}
	}
}

// TestLineShowsTheKeysValues: a format that names no key column (debezium-json,
// maxwell-json) printed the row's key as "-" in -o line, although the message's key holds
// its values (`db.table:[7]` under partition_by pk); a key of another table, or a
// table's own (partition_by table), still shows "-".
func TestLineShowsTheKeysValues(t *testing.T) {
	debezium := func(db string) string {
		return `{"before":null,"after":{"id":7,"v":"a"},"source":{"name":"x","db":"` + db + `","table":"orders","ts_ms":1764424800000},"op":"c"}`
	}
	maxwell := `{"database":"shop","table":"orders","type":"insert","ts":1764424800,"data":{"id":7,"v":"a"}}`
	for _, tc := range []struct{ name, key, value, want string }{
		{"debezium-json, pk", "shop.orders:[7]", debezium("shop"), ` insert shop.orders [7] {"id":7,"v":"a"}`},
		{"debezium-json, Debezium's key", `{"id":7}`, debezium("shop"), ` insert shop.orders {"id":7} {"id":7,"v":"a"}`},
		{"maxwell-json, Maxwell's key", `{"database":"shop","table":"orders","pk.id":7}`, maxwell, ` insert shop.orders {"id":7} {"id":7,"v":"a"}`},
		{"debezium-json, Debezium's key with its schema", `{"schema":{"type":"struct","fields":[]},"payload":{"id":7}}`, debezium("shop"), ` insert shop.orders {"id":7} {"id":7,"v":"a"}`},
		{"maxwell-json, pk", `shop.orders:[7,"b"]`, maxwell, ` insert shop.orders [7,"b"] {"id":7,"v":"a"}`},
		{"a dotted database", "`my.db`.orders:[7]", debezium("my.db"), ` insert my.db.orders [7] {"id":7,"v":"a"}`},
		{"partition_by table", "shop.orders", debezium("shop"), ` insert shop.orders - {"id":7,"v":"a"}`},
		{"another table's key", "shop.items:[7]", debezium("shop"), ` insert shop.orders - {"id":7,"v":"a"}`},
		{"not JSON after the table", "shop.orders:[7", debezium("shop"), ` insert shop.orders - {"id":7,"v":"a"}`},
	} {
		var b strings.Builder
		p := &tail.Printer{W: &b, Mode: tail.Line, Format: tail.Auto}
		if _, err := p.Print(bus.Message{Topic: "t", Key: []byte(tc.key), Value: []byte(tc.value)}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s: -o line printed %q, want it to hold %q", tc.name, b.String(), tc.want)
		}
	}
}
