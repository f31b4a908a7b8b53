package rowenc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestNewFormat(t *testing.T) {
	for _, name := range []string{"", FormatJSON} {
		f, err := NewFormat(name, nil)
		if err != nil || f != JSON {
			t.Errorf("NewFormat(%q) = %v, %v; want json", name, f, err)
		}
	}
	_, err := NewFormat("avro", nil)
	want := `format "avro": unknown; known formats: ` + strings.Join(FormatNames(), ", ")
	if err == nil || err.Error() != want || !strings.Contains(want, FormatJSON) {
		t.Errorf("unknown format: %v, want %q", err, want)
	}
	if _, err := NewFormat(FormatJSON, map[string]string{"schema": "true"}); err == nil || !strings.Contains(err.Error(), `option "schema": the format has no options`) {
		t.Errorf("json with an option: %v", err)
	}
}

func TestParseFormatOptions(t *testing.T) {
	known := []FormatOption{{Name: "schema", Values: []string{"false", "true"}}, {Name: "decimal", Values: []string{"string", "precise"}}}
	got, err := ParseFormatOptions("f", map[string]string{"decimal": "precise"}, known)
	if err != nil || got["schema"] != "false" || got["decimal"] != "precise" {
		t.Fatalf("got %v, %v", got, err)
	}
	for opts, want := range map[string]string{
		"colour=red":  `format f: option "colour": unknown; known options: schema, decimal`,
		"schema=yes":  `format f: option schema "yes": want one of false, true`,
		"decimal=int": `format f: option decimal "int": want one of string, precise`,
	} {
		k, v, _ := strings.Cut(opts, "=")
		if _, err := ParseFormatOptions("f", map[string]string{k: v}, known); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", opts, err, want)
		}
	}
}

// testFormat writes "<type> <after col 1> <before col 1> <same col 1>" and counts its
// calls, so a test sees what the encoder handed it.
type testFormat struct {
	calls int
	tomb  bool
}

func (f *testFormat) Name() string     { return "test" }
func (f *testFormat) Tombstones() bool { return f.tomb }
func (f *testFormat) AppendDDL(dst []byte, d *DDL) ([]byte, bool, error) {
	return nil, false, nil
}

func (f *testFormat) AppendRow(dst []byte, r *Row) ([]byte, error) {
	f.calls++
	dst = append(dst, r.Type...)
	for _, im := range []Image{r.After, r.Before} {
		dst = append(dst, ' ')
		if im.IsNil() {
			dst = append(dst, '-')
			continue
		}
		var err error
		if dst, err = im.AppendJSON(dst, 1); err != nil {
			return dst, err
		}
	}
	if !r.Before.IsNil() && !r.After.IsNil() {
		same, err := r.Before.Same(r.After, 1)
		if err != nil {
			return dst, err
		}
		dst = fmt.Appendf(dst, " %v", same)
	}
	return fmt.Appendf(dst, " %v", r.Meta.Commit), nil
}

// TestEncodeTargets: each target gets its format's message, a row is encoded once per
// distinct format, json's message is EncodeRow's (whatever targets sit beside it), and a
// format with tombstones follows each delete with a nil value under the same key when
// that key is the row's own (pk partitioning), not its table's.
func TestEncodeTargets(t *testing.T) {
	tb := testTable()
	tb.Prepare()
	m := Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 1234}
	rows := [][]any{{uint64(7), "1.50", "a"}, {uint64(7), "2.00", "a"}, {uint64(8), "3.00", nil}, {uint64(8), "3.00", nil}}
	for _, typ := range []string{TypeInsert, TypeUpdate, TypeDelete, TypeSnapshot} {
		t.Run(typ, func(t *testing.T) {
			f := &testFormat{tomb: true}
			targets := []Target{{By: PartitionPK}, {By: PartitionPK, Format: f}, {By: PartitionTable, Format: f}, {By: PartitionTable, Format: JSON}}
			images := make([]values, len(rows))
			for i := range rows {
				images[i] = rows[i]
			}
			ev := &Event{Table: tb, Type: typ, Meta: m, Rows: Rows{rows: images}}
			msgs, err := new(Encoder).Encode(ev, targets, true, 5, nil)
			if err != nil {
				t.Fatal(err)
			}
			step := 1
			if typ == TypeUpdate {
				step = 2
			}
			nRows := len(rows) / step
			if f.calls != nRows {
				t.Errorf("the test format encoded %d times, want once per row (%d)", f.calls, nRows)
			}
			var want []string
			for r := range nRows {
				meta := m
				if r == nRows-1 {
					meta.Commit, meta.XID = true, 5
				}
				var before, after []any
				switch typ {
				case TypeUpdate:
					before, after = rows[2*r], rows[2*r+1]
				case TypeDelete:
					before = rows[r]
				default:
					after = rows[r]
				}
				js, err := EncodeRow(nil, tb, typ, meta, before, after)
				if err != nil {
					t.Fatal(err)
				}
				image := after
				if image == nil {
					image = before
				}
				pk, table := AppendKey(nil, tb, PartitionPK, image), AppendKey(nil, tb, PartitionTable, image)
				col := func(v []any) string {
					if v == nil {
						return "-"
					}
					b, _ := appendValue(nil, &tb.Columns[1], v[1])
					return string(b)
				}
				own := fmt.Sprintf("%s %s %s", typ, col(after), col(before))
				if typ == TypeUpdate {
					own += fmt.Sprintf(" %v", before[1] == after[1])
				}
				own += fmt.Sprintf(" %v", meta.Commit)
				want = append(want, fmt.Sprintf("0 %s %s", pk, js), fmt.Sprintf("1 %s %s", pk, own))
				if typ == TypeDelete {
					want = append(want, fmt.Sprintf("1 %s <nil>", pk))
				}
				want = append(want, fmt.Sprintf("2 %s %s", table, own)) // no tombstone for a table's key
				want = append(want, fmt.Sprintf("3 %s %s", table, js))
			}
			var got []string
			for _, msg := range msgs {
				v := string(msg.Value)
				if msg.Value == nil {
					v = "<nil>"
				}
				got = append(got, fmt.Sprintf("%d %s %s", msg.By, msg.Key, v))
			}
			if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
				t.Errorf("messages:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}

// TestJSONFormatAppendRow: the json Format's AppendRow is EncodeRow's message.
func TestJSONFormatAppendRow(t *testing.T) {
	tb := testTable()
	m := Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 9, Commit: true}
	rows := Rows{rows: []values{{uint64(7), "1.50", "a"}, {uint64(7), "2.00", "b"}}}
	for _, tc := range []struct {
		typ    string
		bi, ai int
	}{{TypeInsert, -1, 0}, {TypeUpdate, 0, 1}, {TypeDelete, 0, -1}} {
		r := &Row{Table: tb, Type: tc.typ, Meta: m, Before: Image{rows: &rows, t: tb, i: tc.bi}, After: Image{rows: &rows, t: tb, i: tc.ai}}
		got, err := JSON.AppendRow(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		var before, after []any
		if tc.bi >= 0 {
			before = rows.rows[tc.bi]
		}
		if tc.ai >= 0 {
			after = rows.rows[tc.ai]
		}
		want, _ := EncodeRow(nil, tb, tc.typ, m, before, after)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.typ, got, want)
		}
	}
	got, ok, err := JSON.AppendDDL(nil, &DDL{Database: "shop", Table: "orders", Meta: m, SQL: "ALTER TABLE orders ADD c INT"})
	if want := EncodeDDL(nil, "shop", "orders", m, "ALTER TABLE orders ADD c INT"); !ok || err != nil || !bytes.Equal(got, want) {
		t.Errorf("DDL: %s %v %v, want %s", got, ok, err, want)
	}
}

// TestFormatsAllocate: encoding a row of every column type allocates nothing in any
// format's default rendering (nor in debezium-json's schema and epoch values), once the message buffer has grown (an ENUM's value list
// included: no string is built per message).
func TestFormatsAllocate(t *testing.T) {
	if testenv.Race {
		// The race detector drops sync.Pool items on purpose (every format's scratch
		// comes from one) and so allocates; make test's second pass counts without it.
		t.Skip("allocations are counted without -race (make test's second pass)")
	}
	tb := goldenTable()
	first, second := goldenRows()
	rows := Rows{rows: []values{first, second}}
	type variant struct {
		name string
		opts map[string]string
	}
	var variants []variant
	for _, name := range FormatNames() {
		variants = append(variants, variant{name: name})
	}
	// Debezium's schema and epoch values too; decimal: precise builds a big.Int per value.
	variants = append(variants, variant{FormatDebeziumJSON, map[string]string{"schema": "true", "temporal": "epoch", "decimal": "double"}})
	for _, v := range variants {
		name := fmt.Sprint(v.name, v.opts)
		f, err := NewFormat(v.name, v.opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{TypeInsert, TypeUpdate} {
			r := &Row{Table: tb, Type: typ, Before: NoImage, After: Image{rows: &rows, t: tb, i: 0}}
			if typ == TypeUpdate {
				r.Before = Image{rows: &rows, t: tb, i: 1}
			}
			buf := make([]byte, 0, 1<<16)
			if allocs := testing.AllocsPerRun(100, func() {
				if _, err := f.AppendRow(buf[:0], r); err != nil {
					t.Fatal(err)
				}
			}); allocs != 0 {
				t.Errorf("%s %s: %.1f allocations per row", name, typ, allocs)
			}
		}
	}
}

// TestArenaAfterALargeRow: an event of many small rows after one of a large row starts
// with an arena near what its own messages need, not its row count times the large
// row's size (a 40 MB row, then a thousand small ones, asked for 54 GB: the wave died of
// it at the same row on every restart).
func TestArenaAfterALargeRow(t *testing.T) {
	tb := testTable()
	tb.Prepare()
	m := Meta{Instance: "orders", File: "bin.000001", Pos: 4}
	targets := []Target{{By: PartitionPK}, {By: PartitionTable, Format: JSON}}
	e := new(Encoder)
	encode := func(rows [][]any) {
		t.Helper()
		images := make([]values, len(rows))
		for i := range rows {
			images[i] = rows[i]
		}
		msgs, err := e.Encode(&Event{Table: tb, Type: TypeInsert, Meta: m, Rows: Rows{rows: images}}, targets, true, 1, nil)
		if err != nil || len(msgs) != len(rows)*len(targets) {
			t.Fatalf("%d messages, err %v", len(msgs), err)
		}
	}
	encode([][]any{{uint64(1), "1.00", strings.Repeat("x", 8<<20)}})
	small := make([][]any, 1000)
	for i := range small {
		small[i] = []any{uint64(i), "2.00", "a"}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	encode(small)
	runtime.ReadMemStats(&after)
	// The messages are ~150 bytes each; the old guess was 2,000 × 8 MiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("encoding 1,000 small rows after an 8 MiB one allocated %d MiB", got>>20)
	}
	for _, tc := range []struct{ n, bytes, want int }{
		{2000, 100, 2000*100 + 100},
		{2000, 8 << 20, maxArenaGuess},
		{1, 40 << 20, maxArenaGuess},
		{200000, 300, 200000*300 + 300},
		{200000, 2000, 200000 * 512},
	} {
		if got := arenaSize(tc.n, tc.bytes); got != tc.want {
			t.Errorf("arenaSize(%d, %d) = %d, want %d", tc.n, tc.bytes, got, tc.want)
		}
	}
}

// TestDebeziumSplitsAKeyChange: an update that changes the row's primary key goes out
// in debezium-json as Debezium sends it: a delete under the old key, its tombstone, then
// a create under the new key with the transaction's commit, so that a compacted topic
// forgets the old key and the old key's partition learns the row left. Keyed by table
// (one key for both), and when the key is unchanged, it stays one update.
func TestDebeziumSplitsAKeyChange(t *testing.T) {
	tb := testTable()
	tb.Prepare()
	dbz, err := NewFormat(FormatDebeziumJSON, map[string]string{"tombstones": "true"})
	if err != nil {
		t.Fatal(err)
	}
	m := Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 1234}
	targets := []Target{{By: PartitionPK, Format: dbz}, {By: PartitionTable, Format: dbz}, {By: PartitionPK}}
	encode := func(before, after []any) []Message {
		t.Helper()
		ev := &Event{Table: tb, Type: TypeUpdate, Meta: m, Rows: Rows{rows: []values{before, after}}}
		msgs, err := new(Encoder).Encode(ev, targets, true, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	op := func(v []byte) string {
		var e struct{ Op string }
		if v == nil {
			return "tombstone"
		}
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		return e.Op
	}
	var got []string
	for _, msg := range encode([]any{uint64(7), "1.50", "a"}, []any{uint64(8), "1.50", "a"}) {
		got = append(got, fmt.Sprintf("%d %s %s", msg.By, msg.Key, op(msg.Value)))
	}
	// Debezium's keys under partition_by pk (a struct of the primary key), BinLake's
	// elsewhere (a table's key; the json target's).
	oldKey, newKey := `{"id":7}`, `{"id":8}`
	tableKey := string(AppendKey(nil, tb, PartitionTable, []any{uint64(8), "1.50", "a"}))
	want := []string{"0 " + oldKey + " d", "0 " + oldKey + " tombstone", "0 " + newKey + " c", "1 " + tableKey + " u",
		"2 " + string(AppendKey(nil, tb, PartitionPK, []any{uint64(8), "1.50", "a"})) + " "}
	if !slices.Equal(got, want) {
		t.Errorf("messages\n%q\nwant\n%q", got, want)
	}
	// The delete carries the old row, the create the new one.
	msgs := encode([]any{uint64(7), "1.50", "a"}, []any{uint64(8), "1.50", "a"})
	if !bytes.Contains(msgs[0].Value, []byte(`"before":{"id":7,`)) || !bytes.Contains(msgs[0].Value, []byte(`"after":null`)) ||
		!bytes.Contains(msgs[2].Value, []byte(`"before":null,"after":{"id":8,`)) {
		t.Errorf("delete %s\ncreate %s", msgs[0].Value, msgs[2].Value)
	}
	// The same key: one update.
	if msgs := encode([]any{uint64(7), "1.50", "a"}, []any{uint64(7), "2.00", "a"}); len(msgs) != 3 || op(msgs[0].Value) != "u" {
		t.Errorf("an update of the same key: %d messages, the first %s", len(msgs), msgs[0].Value)
	}
	// Two rows of one update event, both keys changed: each row's delete and create carry
	// its index in the event, as Debezium's source.row (they said 0, 1, 2, 3: an outside
	// trial).
	ev := &Event{Table: tb, Type: TypeUpdate, Meta: m, Rows: Rows{rows: []values{
		{uint64(7), "1.50", "a"}, {uint64(17), "1.50", "a"}, {uint64(8), "1.50", "a"}, {uint64(18), "1.50", "a"}}}}
	msgs, err = new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: dbz}}, true, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, msg := range msgs {
		if msg.Value != nil {
			var e struct {
				Op     string
				Source struct{ Row int }
			}
			if err := json.Unmarshal(msg.Value, &e); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, fmt.Sprintf("%s%d", e.Op, e.Source.Row))
		}
	}
	if want := []string{"d0", "c0", "d1", "c1"}; !slices.Equal(rows, want) {
		t.Errorf("source.row of a two-row key change: %v, want %v", rows, want)
	}
}

// TestNoTombstoneWithoutARowKey: a table without a primary key has its table's key under
// pk partitioning, and a delete's tombstone there would delete, under log compaction,
// every row message of the table (an outside trial's debezium-json sent one).
func TestNoTombstoneWithoutARowKey(t *testing.T) {
	tb := testTable()
	for i := range tb.Columns {
		tb.Columns[i].PK = false
	}
	tb.PK = nil
	tb.Prepare()
	f := &testFormat{tomb: true}
	ev := &Event{Table: tb, Type: TypeDelete, Meta: Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 1234},
		Rows: Rows{rows: []values{{uint64(7), "1.50", "a"}}}}
	msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Value == nil || string(msgs[0].Key) != tb.Database+"."+tb.Name {
		var got []string
		for _, m := range msgs {
			got = append(got, fmt.Sprintf("%s %q", m.Key, m.Value))
		}
		t.Fatalf("messages %q, want the delete alone under the table's key", got)
	}
}

// TestDebeziumKey: debezium-json's key under partition_by pk is Debezium's, its primary
// key's columns as a struct, rendered as the value renders them, with schema: true as
// JsonConverter's {schema, payload} under <instance>.<db>.<table>.Key: BinLake's
// db.table:[7] failed JsonConverter on every record (an outside trial). key: binlake keeps
// BinLake's. A table without a primary key has Debezium's null, as JSON (BinLake's
// db.table failed JsonConverter on every record of such a table: an outside trial), and
// sends no tombstone.
func TestDebeziumKey(t *testing.T) {
	tb := testTable()
	tb.Prepare()
	m := Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 1234}
	keyOf := func(opts map[string]string, tb *Table, typ string) string {
		t.Helper()
		f, err := NewFormat(FormatDebeziumJSON, opts)
		if err != nil {
			t.Fatal(err)
		}
		rows := []values{{uint64(7), "1.50", "a"}}
		ev := &Event{Table: tb, Type: typ, Meta: m, Rows: Rows{rows: rows}}
		msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("%v: %v", opts, err)
		}
		return string(msgs[0].Key)
	}
	if got := keyOf(nil, tb, TypeInsert); got != `{"id":7}` {
		t.Errorf("key %s, want Debezium's {\"id\":7}", got)
	}
	if got := keyOf(nil, tb, TypeDelete); got != `{"id":7}` {
		t.Errorf("a delete's key %s, want its before image's {\"id\":7}", got)
	}
	want := `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"orders.shop.orders.Key"},"payload":{"id":7}}`
	if got := keyOf(map[string]string{"schema": "true"}, tb, TypeInsert); got != want {
		t.Errorf("with schema: key %s, want %s", got, want)
	}
	if got, want := keyOf(map[string]string{"key": "binlake"}, tb, TypeInsert), string(AppendKey(nil, tb, PartitionPK, []any{uint64(7), "1.50", "a"})); got != want {
		t.Errorf("key: binlake: %s, want %s", got, want)
	}
	noPK := keylessTestTable()
	if got, want := keyOf(nil, noPK, TypeInsert), "null"; got != want {
		t.Errorf("no primary key: key %s, want %s", got, want)
	}
	if got, want := keyOf(map[string]string{"schema": "true"}, noPK, TypeInsert), `{"schema":null,"payload":null}`; got != want {
		t.Errorf("no primary key, with schema: key %s, want %s", got, want)
	}
	if got, want := keyOf(map[string]string{"key": "binlake"}, noPK, TypeInsert), "shop.orders"; got != want {
		t.Errorf("no primary key, key: binlake: %s, want %s", got, want)
	}
	f, err := NewFormat(FormatDebeziumJSON, map[string]string{"tombstones": "true"})
	if err != nil {
		t.Fatal(err)
	}
	ev := &Event{Table: noPK, Type: TypeDelete, Meta: m, Rows: Rows{rows: []values{{uint64(7), "1.50", "a"}}}}
	msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
	if err != nil || len(msgs) != 1 {
		t.Errorf("a keyless table's delete with tombstones: %d messages (%v), want the delete alone", len(msgs), err)
	}
}

// keylessTestTable is testTable without its primary key.
func keylessTestTable() *Table {
	t := testTable()
	t.PK = nil
	for i := range t.Columns {
		t.Columns[i].PK = false
	}
	t.Prepare()
	return t
}

// TestMaxwellKey: maxwell-json's key under partition_by pk is Maxwell's
// (kafka_key_format=hash): its database, table and primary key columns as "pk.<column>",
// a table without a primary key's its database and table (BinLake's db.table was no
// JSON: an outside trial); key: binlake keeps BinLake's.
func TestMaxwellKey(t *testing.T) {
	noPK := keylessTestTable()
	keyOf := func(opts map[string]string, tb *Table) string {
		t.Helper()
		f, err := NewFormat(FormatMaxwellJSON, opts)
		if err != nil {
			t.Fatal(err)
		}
		ev := &Event{Table: tb, Type: TypeInsert, Meta: Meta{Instance: "orders", TS: 1764424800}, Rows: Rows{rows: []values{{uint64(7), "1.50", "a"}}}}
		msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(msgs[0].Key)
	}
	if got, want := keyOf(nil, noPK), `{"database":"shop","table":"orders"}`; got != want {
		t.Errorf("no primary key: %s, want %s", got, want)
	}
	if got, want := keyOf(map[string]string{"key": "binlake"}, noPK), "shop.orders"; got != want {
		t.Errorf("no primary key, key: binlake: %s, want %s", got, want)
	}
	tb := testTable()
	tb.Prepare()
	for opt, want := range map[string]string{
		"":        `{"database":"shop","table":"orders","pk.id":7}`,
		"binlake": string(AppendKey(nil, tb, PartitionPK, []any{uint64(7), "1.50", "a"})),
	} {
		opts := map[string]string{}
		if opt != "" {
			opts["key"] = opt
		}
		if got := keyOf(opts, tb); got != want {
			t.Errorf("key option %q: %s, want %s", opt, got, want)
		}
	}
}

// TestDebeziumBigintUnsignedPrecise: bigint_unsigned: precise (Debezium's
// bigint.unsigned.handling.mode) sends a BIGINT UNSIGNED as Kafka Connect's Decimal of
// scale 0, base64 of its two's-complement bytes, so that 2⁶⁴−1 reads exact where an int64
// schema has JsonConverter read -1 (an outside trial); long keeps int64 and the number.
func TestDebeziumBigintUnsignedPrecise(t *testing.T) {
	tb := testTable()
	tb.Prepare()
	value := func(opts map[string]string) string {
		t.Helper()
		f, err := NewFormat(FormatDebeziumJSON, opts)
		if err != nil {
			t.Fatal(err)
		}
		ev := &Event{Table: tb, Type: TypeInsert, Meta: Meta{Instance: "orders", TS: 1764424800},
			Rows: Rows{rows: []values{{uint64(math.MaxUint64), "1.50", "a"}}}}
		msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(msgs[0].Value)
	}
	max := base64.StdEncoding.EncodeToString(append([]byte{0}, bytes.Repeat([]byte{0xff}, 8)...))
	got := value(map[string]string{"schema": "true", "bigint_unsigned": "precise"})
	for _, want := range []string{
		`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"0"},"field":"id"}`,
		`"after":{"id":"` + max + `"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("precise: %s\nwant it to hold %s", got, want)
		}
	}
	if got := value(map[string]string{"schema": "true"}); !strings.Contains(got, `{"type":"int64","optional":false,"field":"id"}`) || !strings.Contains(got, `"after":{"id":18446744073709551615,`) {
		t.Errorf("long: %s", got)
	}
}

// TestDebeziumBits: Debezium's MySQL connector sends a BIT(1) as a boolean and a wider
// BIT(n) as io.debezium.data.Bits: bytes (base64 in JSON) holding the bits little-endian
// in (n+7)/8 bytes, the width in the schema's length parameter; BinLake sent every BIT
// as an int64, which a Connect sink of Debezium's schema reads as another type. A BIT
// whose width is not known stays a number.
func TestDebeziumBits(t *testing.T) {
	f, err := NewFormat(FormatDebeziumJSON, map[string]string{"schema": "true"})
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	for _, c := range []struct {
		bits         uint8
		v            int64
		schema, want string
	}{
		{1, 1, `{"type":"boolean","optional":true,"field":"b"}`, `true`},
		{1, 0, `{"type":"boolean","optional":true,"field":"b"}`, `false`},
		{10, 0x2aa, `{"type":"bytes","optional":true,"name":"io.debezium.data.Bits","version":1,"parameters":{"length":"10"},"field":"b"}`, `"` + b64([]byte{0xaa, 0x02}) + `"`},
		{8, 0x81, `"parameters":{"length":"8"}`, `"` + b64([]byte{0x81}) + `"`},
		{64, -1, `"parameters":{"length":"64"}`, `"` + b64(bytes.Repeat([]byte{0xff}, 8)) + `"`},
		{0, 5, `{"type":"int64","optional":true,"field":"b"}`, `5`},
	} {
		tb := &Table{Database: "shop", Name: "flags", Columns: []Column{
			{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true}, {Name: "b", Type: mysql.MYSQL_TYPE_BIT, Bits: c.bits}}, PK: []int{0}}
		tb.Prepare()
		ev := &Event{Table: tb, Type: TypeInsert, Meta: Meta{Instance: "orders", TS: 1764424800},
			Rows: Rows{rows: []values{{int32(7), c.v}}}}
		msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := string(msgs[0].Value)
		if !strings.Contains(got, c.schema) || !strings.Contains(got, `"after":{"id":7,"b":`+c.want+`}`) {
			t.Errorf("BIT(%d) %#x: %s\nwant %s and b %s", c.bits, c.v, got, c.schema, c.want)
		}
	}
}

// TestDebeziumDecimalSchemaFromTheColumn: with decimal: precise, a DECIMAL's schema takes
// its scale and precision from the column's definition, as Debezium's does, for a NULL
// value too: read off the value, a NULL's scale was "0" where the others' was "4", so the
// column's schema changed with its values (an outside trial: a sink creating its table
// from a NULL row made it DECIMAL(…,0)). Without the definition, the value says the scale.
func TestDebeziumDecimalSchemaFromTheColumn(t *testing.T) {
	f, err := NewFormat(FormatDebeziumJSON, map[string]string{"schema": "true", "decimal": "precise"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prec, scale uint8
		v           any
		want        string
	}{
		{10, 4, nil, `"parameters":{"scale":"4","connect.decimal.precision":"10"},"field":"d"}`},
		{10, 4, "1.5000", `"parameters":{"scale":"4","connect.decimal.precision":"10"},"field":"d"}`},
		{65, 30, nil, `"parameters":{"scale":"30","connect.decimal.precision":"65"},"field":"d"}`},
		{0, 0, "1.5000", `"parameters":{"scale":"4"},"field":"d"}`},
		{0, 0, nil, `"parameters":{"scale":"0"},"field":"d"}`},
	} {
		tb := &Table{Database: "shop", Name: "prices", Columns: []Column{
			{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true}, {Name: "d", Type: mysql.MYSQL_TYPE_NEWDECIMAL, Precision: c.prec, Scale: c.scale}}, PK: []int{0}}
		tb.Prepare()
		ev := &Event{Table: tb, Type: TypeInsert, Meta: Meta{Instance: "orders", TS: 1764424800}, Rows: Rows{rows: []values{{int32(1), c.v}}}}
		msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(msgs[0].Value); !strings.Contains(got, c.want) {
			t.Errorf("DECIMAL(%d,%d) %v: %s\nwant %s", c.prec, c.scale, c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		length   uint32
		decimals uint8
		unsigned bool
		want     uint8
	}{{12, 4, false, 10}, {11, 4, true, 10}, {11, 0, false, 10}, {67, 30, false, 65}, {1, 0, false, 0}, {3, 4, false, 0}} {
		if got := DecimalPrecision(c.length, c.decimals, c.unsigned); got != c.want {
			t.Errorf("DecimalPrecision(%d, %d, %v) = %d, want %d", c.length, c.decimals, c.unsigned, got, c.want)
		}
	}
}

// TestDebeziumNotNullAndZeroDates: a NOT NULL column's schema is required, as Debezium's
// (every field said optional: an outside trial against Debezium 3.5); under temporal:
// epoch a zero DATE or DATETIME in a NOT NULL column is 0 and a zero TIMESTAMP the
// epoch with the column's digits, as Debezium sends them; under temporal: string a zero
// date stays null, so its NOT NULL column stays optional. source.pos is where the rows
// event starts and source.row the row's index in it, as Debezium's.
func TestDebeziumNotNullAndZeroDates(t *testing.T) {
	cols := []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true, NotNull: true},
		{Name: "n", Type: mysql.MYSQL_TYPE_LONG, NotNull: true},
		{Name: "o", Type: mysql.MYSQL_TYPE_LONG},
		{Name: "d", Type: mysql.MYSQL_TYPE_DATE, NotNull: true},
		{Name: "dn", Type: mysql.MYSQL_TYPE_DATE},
		{Name: "dt", Type: mysql.MYSQL_TYPE_DATETIME2, NotNull: true},
		{Name: "ts", Type: mysql.MYSQL_TYPE_TIMESTAMP2, NotNull: true},
		{Name: "ts6", Type: mysql.MYSQL_TYPE_TIMESTAMP2, Frac: 6},
	}
	zero := []any{int32(1), int32(2), nil, "0000-00-00", "0000-00-00", "0000-00-00 00:00:00", "0000-00-00 00:00:00", "0000-00-00 00:00:00.000000"}
	// A date with a zero part, not all zero, in the NOT NULL columns: 0 as well under
	// epoch, not a null in a required field (JsonConverter refused it: an outside trial).
	partial := []any{int32(3), int32(2), nil, "2024-00-10", "2024-05-00", "2024-05-00 10:00:00", "0000-00-00 00:00:00", "0000-00-00 00:00:00.000000"}
	for _, c := range []struct {
		temporal string
		want     []string
	}{
		{"epoch", []string{
			`{"type":"int32","optional":false,"field":"id"}`, `{"type":"int32","optional":false,"field":"n"}`, `{"type":"int32","optional":true,"field":"o"}`,
			`{"type":"int32","optional":false,"name":"io.debezium.time.Date","version":1,"field":"d"}`,
			`{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1,"field":"dn"}`,
			`{"type":"int64","optional":false,"name":"io.debezium.time.Timestamp","version":1,"field":"dt"}`,
			`{"type":"string","optional":false,"name":"io.debezium.time.ZonedTimestamp","version":1,"field":"ts"}`,
			`"after":{"id":1,"n":2,"o":null,"d":0,"dn":null,"dt":0,"ts":"1970-01-01T00:00:00Z","ts6":"1970-01-01T00:00:00.000000Z"}`,
			`"after":{"id":3,"n":2,"o":null,"d":0,"dn":null,"dt":0,`}},
		{"string", []string{
			`{"type":"int32","optional":false,"field":"n"}`, `{"type":"string","optional":true,"field":"d"}`,
			`{"type":"string","optional":true,"field":"ts"}`,
			`"after":{"id":1,"n":2,"o":null,"d":null,"dn":null,"dt":null,"ts":null,"ts6":null}`}},
	} {
		f, err := NewFormat(FormatDebeziumJSON, map[string]string{"schema": "true", "temporal": c.temporal})
		if err != nil {
			t.Fatal(err)
		}
		tb := &Table{Database: "shop", Name: "zz", Columns: slices.Clone(cols), PK: []int{0}}
		tb.Prepare()
		second := slices.Clone(zero)
		second[0] = int32(2)
		ev := &Event{Table: tb, Type: TypeInsert, Meta: Meta{Instance: "orders", TS: 1764424800, File: "bin.000001", Pos: 300, EventPos: 211},
			Rows: Rows{rows: []values{zero, second, partial}}}
		msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := string(msgs[0].Value) + string(msgs[2].Value)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("temporal %s: %s\nwant %s", c.temporal, got, w)
			}
		}
		for i, m := range msgs {
			if w := fmt.Sprintf(`"pos":211,"row":%d,`, i); !strings.Contains(string(m.Value), w) {
				t.Errorf("temporal %s, row %d: %s\nwant %s", c.temporal, i, m.Value, w)
			}
		}
	}
}

// TestDebeziumFloatsAsJava: FLOAT and DOUBLE go out as Java writes them, as JsonConverter
// does (0.0, 1.0E-300): without schemas JsonConverter read Go's 0 as a long (an outside
// trial against Debezium 3.5).
func TestDebeziumFloatsAsJava(t *testing.T) {
	f, err := NewFormat(FormatDebeziumJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := &Table{Database: "shop", Name: "m", Columns: []Column{{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true},
		{Name: "f", Type: mysql.MYSQL_TYPE_FLOAT}, {Name: "d", Type: mysql.MYSQL_TYPE_DOUBLE}}, PK: []int{0}}
	tb.Prepare()
	for _, c := range []struct {
		f    float32
		d    float64
		want string
	}{
		{0, 0, `"f":0.0,"d":0.0`},
		{1234.567, 1e-300, `"f":1234.567,"d":1.0E-300`},
		{-1.5, 12345678.5, `"f":-1.5,"d":1.23456785E7`},
	} {
		ev := &Event{Table: tb, Type: TypeInsert, Meta: Meta{Instance: "orders", TS: 1764424800}, Rows: Rows{rows: []values{{int32(1), c.f, c.d}}}}
		msgs, err := new(Encoder).Encode(ev, []Target{{By: PartitionPK, Format: f}}, true, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(msgs[0].Value); !strings.Contains(got, c.want) {
			t.Errorf("%v, %v: %s\nwant %s", c.f, c.d, got, c.want)
		}
	}
}
