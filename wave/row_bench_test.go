package wave

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
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
