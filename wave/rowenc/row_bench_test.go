package rowenc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// benchTable is an order table as shops have them: a key, text, a decimal, an enum,
// temporal columns, a JSON document and a blob, as go-mysql decodes them.
func benchTable() (*Table, [][]any) {
	t := &Table{Database: "shop", Name: "orders", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONGLONG, PK: true},
		{Name: "customer", Type: mysql.MYSQL_TYPE_VARCHAR},
		{Name: "amount", Type: mysql.MYSQL_TYPE_NEWDECIMAL},
		{Name: "status", Type: mysql.MYSQL_TYPE_ENUM, Enum: []string{"new", "paid", "shipped"}},
		{Name: "created", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 6},
		{Name: "updated", Type: mysql.MYSQL_TYPE_TIMESTAMP2},
		{Name: "attrs", Type: mysql.MYSQL_TYPE_JSON},
		{Name: "qty", Type: mysql.MYSQL_TYPE_LONG, Unsigned: true},
		{Name: "weight", Type: mysql.MYSQL_TYPE_DOUBLE},
		{Name: "thumb", Type: mysql.MYSQL_TYPE_BLOB, Binary: true},
	}}
	t.Prepare() // as the capture does
	rows := make([][]any, 64)
	for i := range rows {
		rows[i] = []any{int64(1000 + i), fmt.Sprintf("customer-%d@example.com", i), "1234.50", int64(1 + i%3),
			time.Date(2026, 12, 1, 10, 11, 12, 123456000, time.UTC), time.Unix(1764583873+int64(i), 0), []byte(`{"gift": true, "tags": ["a", "b"], "n": ` + fmt.Sprint(i) + `}`),
			int32(i % 7), 1.25 * float64(i), []byte("\x89PNG\r\n\x1a\n")}
	}
	return t, rows
}

// BenchmarkEncodeRow is one row message (header, key, data; updates with old) from the
// decoded values, by the wave's encoder and, for comparison, by encoding/json from the
// same values put in maps as a straightforward encoder would. It reports bytes/row.
func BenchmarkEncodeRow(b *testing.B) {
	t, rows := benchTable()
	m := Meta{Instance: "shop-1", TS: 1764583872, GTID: "0-1-123456", File: "mysql-bin.000042", Pos: 4567890}
	for _, typ := range []string{TypeInsert, TypeUpdate} {
		b.Run("wave/"+typ, func(b *testing.B) {
			var buf, key []byte
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				before, after := rows[n%len(rows)], rows[(n+1)%len(rows)]
				if typ == TypeInsert {
					before = nil
				}
				var err error
				if buf, err = EncodeRow(buf[:0], t, typ, m, before, after); err != nil {
					b.Fatal(err)
				}
				key = AppendKey(key[:0], t, PartitionPK, after)
				n++
			}
			b.ReportMetric(float64(len(buf)), "bytes/row")
		})
		b.Run("encoding-json/"+typ, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			var size int
			for b.Loop() {
				before, after := rows[n%len(rows)], rows[(n+1)%len(rows)]
				msg := map[string]any{"instance": m.Instance, "database": t.Database, "table": t.Name, "type": typ,
					"ts": m.TS, "gtid": m.GTID, "file": m.File, "pos": m.Pos, "commit": false,
					"pk": map[string]any{"id": after[0]}, "data": jsonImage(t, after)}
				if typ == TypeUpdate {
					old := map[string]any{}
					for i, c := range t.Columns {
						if fmt.Sprint(before[i]) != fmt.Sprint(after[i]) {
							old[c.Name] = jsonValue(&c, before[i])
						}
					}
					msg["old"] = old
				}
				out, err := json.Marshal(msg)
				if err != nil {
					b.Fatal(err)
				}
				key, _ := json.Marshal([]any{after[0]})
				size = len(out) + len(key)*0
				n++
			}
			b.ReportMetric(float64(size), "bytes/row")
		})
	}
}

// jsonImage and jsonValue give encoding/json the values as the message carries them.
func jsonImage(t *Table, row []any) map[string]any {
	m := make(map[string]any, len(row))
	for i := range t.Columns {
		m[t.Columns[i].Name] = jsonValue(&t.Columns[i], row[i])
	}
	return m
}

func jsonValue(c *Column, v any) any {
	switch c.Type {
	case mysql.MYSQL_TYPE_ENUM:
		return c.Enum[v.(int64)-1]
	case mysql.MYSQL_TYPE_DATETIME2:
		return v.(time.Time).Format("2006-01-02T15:04:05.000000")
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return v.(time.Time).UTC().Format("2006-01-02T15:04:05Z")
	case mysql.MYSQL_TYPE_JSON:
		return json.RawMessage(v.([]byte))
	}
	return v
}

// benchEventRows is the number of rows of benchRowsEvent's event.
const benchEventRows = 100

// benchRowsEvent is BenchmarkRowsEvent's rows event of benchEventRows inserted rows, as
// the capture's syncer leaves it (rows undecoded), and its table's parser.
func benchRowsEvent(b testing.TB) (*testEvents, *replication.RowsEvent) {
	cols := []testColumn{
		{tp: mysql.MYSQL_TYPE_LONGLONG, unsigned: true}, {tp: mysql.MYSQL_TYPE_NEWDECIMAL, meta: 20<<8 | 4},
		{tp: mysql.MYSQL_TYPE_VARCHAR, meta: 64 * 4}, {tp: mysql.MYSQL_TYPE_DATETIME2, meta: 6},
		{tp: mysql.MYSQL_TYPE_LONG, unsigned: true}, {tp: mysql.MYSQL_TYPE_BLOB, meta: 4, json: true},
		{tp: mysql.MYSQL_TYPE_VARCHAR, meta: 32 * 4},
	}
	te := newTestEvents(b, cols)
	const rows = benchEventRows
	var body []byte
	for i := range rows {
		body = append(body, 1<<6) // the last column NULL
		body = binary.LittleEndian.AppendUint64(body, uint64(1_000_000+i))
		body = append(body, decimalField(b, fmt.Sprintf("%d.%04d", 1000+i, i%10000), 20, 4)...)
		name := fmt.Sprintf("customer-%d@example.com", i)
		body = append(append(body, byte(len(name)), 0), name...)
		body = append(body, binary.BigEndian.AppendUint64(nil, datetimeIntOffset+datetimeBits(2026, 12, 1, 10, 11, int64(i%60)))[3:]...)
		micros := i * 7919 % 1_000_000 // DATETIME(6)'s fraction, as MySQL stores it: under a second
		body = append(body, byte(micros>>16), byte(micros>>8), byte(micros))
		body = binary.LittleEndian.AppendUint32(body, uint32(i%7))
		doc := fmt.Sprintf(`{"gift": true, "tags": ["a", "b"], "n": %d}`, i)
		body = append(binary.LittleEndian.AppendUint32(body, uint32(len(doc))), doc...)
	}
	e, err := te.rowsEvent(b, replication.WRITE_ROWS_EVENTv2, body)
	if err != nil {
		b.Fatal(err)
	}
	return te, e
}

// BenchmarkRowsEvent is a rows event of 100 inserted rows of the bench's table (as
// `binlake bench wave` writes them) from the event's bytes to its messages and keys:
// read in place, and decoded by go-mysql first (what the capture does with the kinds it
// does not read in place). It reports ns/row.
func BenchmarkRowsEvent(b *testing.B) {
	te, e := benchRowsEvent(b)
	const rows = benchEventRows
	var err error
	u, _ := undecodedOf(e)
	m := Meta{Instance: "shop-1", TS: 1764583872, GTID: "0-1-123456", File: "mysql-bin.000042", Pos: 4567890}
	var out []byte // one buffer for the event's messages, as the capture's arena
	b.Run("in-place", func(b *testing.B) {
		var fields []span
		var raws []rawImage
		b.ReportAllocs()
		for b.Loop() {
			fields, raws, err = readImages(fields[:0], raws[:0], u.data[u.pos:], te.table, TypeInsert)
			if err != nil {
				b.Fatal(err)
			}
			if out, err = encodeImages(out[:0], te.table, TypeInsert, m, raws); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
	b.Run("go-mysql", func(b *testing.B) {
		d := newRowsDecoder()
		b.ReportAllocs()
		for b.Loop() {
			if err := d.decodeRows(e, u); err != nil {
				b.Fatal(err)
			}
			images := make([]values, len(e.Rows))
			for i := range e.Rows {
				images[i] = e.Rows[i]
			}
			if out, err = encodeImages(out[:0], te.table, TypeInsert, m, images); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
	// Each format through the capture's Encoder (one subscription, read in place): what
	// a rows event costs from its bytes to its messages in that format, per row.
	// go-mysql's decoding above replaced e's rows: the formats read a fresh event.
	// A grouping format runs grouped too, as the wave runs it on a topic of 3 partitions
	// (",partitions=3": bytes/row is then a message's bytes over its rows).
	te, e = benchRowsEvent(b)
	type benchFormat struct {
		name   string
		target Target
	}
	var fs []benchFormat
	for _, name := range FormatNames() {
		f, err := NewFormat(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		fs = append(fs, benchFormat{name, Target{By: PartitionPK, Format: f}})
		if _, ok := f.(GroupFormat); ok {
			fs = append(fs, benchFormat{name + ",partitions=3", Target{By: PartitionPK, Format: f, Partition: kafkaPartition(3)}})
		}
	}
	for _, bf := range fs {
		b.Run("format="+bf.name, func(b *testing.B) {
			var enc Encoder
			reader := NewReader()
			targets := []Target{bf.target}
			var size int
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				ev := &Event{Table: te.table, Type: TypeInsert, Meta: m}
				if ev.Rows, err = reader.Read(replication.WRITE_ROWS_EVENTv2, e, te.table, TypeInsert); err != nil {
					b.Fatal(err)
				}
				msgs, err := enc.Encode(ev, targets, true, 7, nil)
				n := 0
				for _, m := range msgs {
					n += m.Rows
				}
				if err != nil || n != rows {
					b.Fatalf("%d messages of %d rows, %v", len(msgs), n, err)
				}
				size = len(msgs[0].Value) / msgs[0].Rows
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*rows), "allocs/row")
			b.ReportMetric(float64(size), "bytes/row")
		})
	}
}
