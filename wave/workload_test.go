package wave_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/wave/internal/wavetest"
	"github.com/binlake/binlake/wave/rowenc"
)

// The workload writes mixed inserts, updates and deletes to three tables covering the
// types the row message must carry exactly (decimal, JSON, datetime, unsigned, NULL,
// utf8mb4, blob), and remembers, per primary key, every message it expects.

const (
	tOrders = "t_orders"
	tItems  = "t_items"
	tLogs   = "t_logs"
)

var schemaDDL = []string{
	`CREATE TABLE t_orders (
		id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
		amount DECIMAL(30,10) NOT NULL,
		note VARCHAR(200) CHARACTER SET utf8mb4 NULL,
		created DATETIME(6) NOT NULL,
		meta JSON NULL,
		flags INT UNSIGNED NOT NULL,
		payload BLOB NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE t_items (
		id INT NOT NULL PRIMARY KEY,
		price DECIMAL(12,2) NULL,
		name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL,
		qty SMALLINT UNSIGNED NOT NULL,
		tiny TINYINT UNSIGNED NOT NULL,
		img VARBINARY(64) NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE t_logs (
		id INT NOT NULL PRIMARY KEY,
		msg TEXT CHARACTER SET utf8mb4 NOT NULL,
		at DATETIME NULL,
		big BIGINT UNSIGNED NOT NULL,
		ratio DOUBLE NULL,
		neg BIGINT NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
}

// expMsg is one expected row message.
type expMsg struct {
	typ  string
	data []byte // canonical JSON (sorted keys), as canonical() renders a received one
	old  []byte // update: changed columns before
}

type workload struct {
	t    testing.TB
	conn *client.Conn
	db   string
	rng  *rand.Rand

	mu     sync.Mutex
	expect map[string][]expMsg        // "table:pk" → messages in order
	live   map[string]map[int64][]any // table → id → current SQL values
	cols   map[string][]string        // table → column names (changes with DDL)
	nextID map[string]int64
	count  int // expected messages on the main topics

	// stopped ends run early: a test that failed stops its writer before its cleanups
	// close the connection the writer uses.
	stopped atomic.Bool
}

// newWorkload creates a uniquely named database with the three tables.
func newWorkload(t testing.TB, seed uint64) *workload {
	t.Helper()
	conn := wavetest.Connect(t)
	db := fmt.Sprintf("wave_%s_%d", strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())), time.Now().UnixNano()%1e9)
	if len(db) > 60 {
		db = db[len(db)-60:]
		db = "w" + db[1:]
	}
	wavetest.MustExec(t, conn, "CREATE DATABASE "+db)
	t.Cleanup(func() {
		c := wavetest.Connect(t)
		c.Execute("DROP DATABASE IF EXISTS " + db)
	})
	if err := conn.UseDB(db); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range schemaDDL {
		wavetest.MustExec(t, conn, ddl)
	}
	w := &workload{
		t: t, conn: conn, db: db, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		expect: map[string][]expMsg{}, live: map[string]map[int64][]any{},
		nextID: map[string]int64{tOrders: 1, tItems: 1, tLogs: 1},
		cols: map[string][]string{
			tOrders: {"id", "amount", "note", "created", "meta", "flags", "payload"},
			tItems:  {"id", "price", "name", "qty", "tiny", "img"},
			tLogs:   {"id", "msg", "at", "big", "ratio", "neg"},
		},
	}
	for _, tb := range []string{tOrders, tItems, tLogs} {
		w.live[tb] = map[int64][]any{}
	}
	return w
}

var texts = []string{"plain", "ütf8 ünïcödé", "emoji 😀🚀 and 中文", `quote " backslash \ tab	nl
end`, "<html>&amp;</html>", ""}

// row returns SQL values for a new row of table with id.
func (w *workload) row(table string, id int64, gen int) []any {
	r := w.rng
	switch table {
	case tOrders:
		var note any = texts[r.IntN(len(texts))] + " " + strconv.Itoa(gen)
		if r.IntN(7) == 0 {
			note = nil
		}
		var meta any = fmt.Sprintf(`{"n": %d, "tags": ["a", "ü"], "nested": {"ok": true, "f": 1.5}, "s": "%s"}`, id, texts[r.IntN(3)])
		if r.IntN(9) == 0 {
			meta = nil
		}
		var payload any = randBytes(r, r.IntN(40))
		if r.IntN(8) == 0 {
			payload = nil
		}
		amount := fmt.Sprintf("%d.%010d", r.Int64N(1e15)-5e14, r.Int64N(1e10))
		created := fmt.Sprintf("20%02d-%02d-%02d %02d:%02d:%02d.%06d", 10+r.IntN(20), 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e6))
		return []any{uint64(1<<63) + uint64(id), amount, note, created, meta, uint32(4294967295 - r.IntN(1000)), payload}
	case tItems:
		var price any = fmt.Sprintf("%d.%02d", r.IntN(1e8), r.IntN(100))
		if r.IntN(6) == 0 {
			price = nil
		}
		var img any = randBytes(r, 1+r.IntN(63))
		if r.IntN(5) == 0 {
			img = nil
		}
		return []any{int32(id), price, texts[r.IntN(len(texts))] + strconv.Itoa(gen), uint16(65535 - r.IntN(100)), uint8(255 - r.IntN(10)), img}
	default:
		var at any = fmt.Sprintf("2024-%02d-%02d %02d:%02d:%02d", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
		if r.IntN(6) == 0 {
			at = nil
		}
		var ratio any = r.NormFloat64() * 1e6
		if r.IntN(6) == 0 {
			ratio = nil
		}
		return []any{int32(id), strings.Repeat(texts[r.IntN(len(texts))], 1+r.IntN(3)) + strconv.Itoa(gen), at, uint64(18446744073709551615) - uint64(r.IntN(1e6)), ratio, -r.Int64N(1 << 62)}
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// jsonValue is what the wave must send for a SQL value of column col of table.
func jsonValue(table, col string, v any) any {
	if v == nil {
		return nil
	}
	switch x := v.(type) {
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case uint32:
		return json.Number(strconv.FormatUint(uint64(x), 10))
	case uint16:
		return json.Number(strconv.FormatUint(uint64(x), 10))
	case uint8:
		return json.Number(strconv.FormatUint(uint64(x), 10))
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		switch {
		case col == "meta":
			return decodeJSON([]byte(x))
		case col == "created" || col == "at":
			return strings.Replace(x, " ", "T", 1)
		}
		return x
	}
	panic(fmt.Sprintf("unexpected %T", v))
}

func decodeJSON(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

func (w *workload) image(table string, vals []any) []byte {
	m := map[string]any{}
	for i, c := range w.cols[table] {
		m[c] = jsonValue(table, c, vals[i])
	}
	return mustJSON(m)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// canonical re-renders a JSON value with sorted keys and numbers as written, so two
// renderings of the same value compare equal byte for byte. The expectations are kept in
// this form: a few hundred bytes per message instead of a map, which keeps a 200,000-row
// test's heap (and its garbage collection) small.
func canonical(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	return mustJSON(decodeJSON(raw))
}

func pkOf(table string, vals []any) string {
	return fmt.Sprintf("%s:%v", table, vals[0])
}

// txn runs one transaction of ins inserts, upd updates and del deletes on table.
func (w *workload) txn(table string, ins, upd, del int) {
	t := w.t
	w.mu.Lock()
	defer w.mu.Unlock()
	wavetest.MustExec(t, w.conn, "BEGIN")
	cols := w.cols[table]
	if ins > 0 {
		var args []any
		ph := "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
		var phs []string
		for range ins {
			id := w.nextID[table]
			w.nextID[table]++
			vals := w.row(table, id, 0)
			args = append(args, vals...)
			phs = append(phs, ph)
			w.live[table][id] = vals
			w.expect[pkOf(table, vals)] = append(w.expect[pkOf(table, vals)], expMsg{typ: rowenc.TypeInsert, data: w.image(table, vals)})
			w.count++
		}
		wavetest.MustExec(t, w.conn, "INSERT INTO "+table+" ("+strings.Join(cols, ",")+") VALUES "+strings.Join(phs, ","), args...)
	}
	ids := w.liveIDs(table)
	w.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	if upd > len(ids) {
		upd = len(ids)
	}
	if upd > 0 {
		// One statement: the same new values (but the id) for the chosen rows, in id order
		// as InnoDB updates them through the primary key.
		chosen := slices.Clone(ids[:upd])
		slices.Sort(chosen)
		nv := w.row(table, 0, 1)
		set := []string{}
		var args []any
		for i := 1; i < len(cols); i++ {
			if i%2 == 1 || w.rng.IntN(2) == 0 { // some columns change, some keep their value
				set = append(set, cols[i]+" = ?")
				args = append(args, nv[i])
			} else {
				nv[i] = nil // marks "unchanged" below
			}
		}
		changed := map[int]bool{}
		for i := 1; i < len(cols); i++ {
			if slices.Contains(set, cols[i]+" = ?") {
				changed[i] = true
			}
		}
		in := make([]string, len(chosen))
		for i, id := range chosen {
			in[i] = strconv.FormatInt(id, 10)
			if table == tOrders {
				in[i] = strconv.FormatUint(uint64(1<<63)+uint64(id), 10)
			}
		}
		wavetest.MustExec(t, w.conn, "UPDATE "+table+" SET "+strings.Join(set, ", ")+" WHERE id IN ("+strings.Join(in, ",")+")", args...)
		for _, id := range chosen {
			before := w.live[table][id]
			after := slices.Clone(before)
			old := map[string]any{}
			for i := range changed {
				after[i] = nv[i]
			}
			for i := 1; i < len(cols); i++ {
				if !reflect.DeepEqual(jsonValue(table, cols[i], before[i]), jsonValue(table, cols[i], after[i])) {
					old[cols[i]] = jsonValue(table, cols[i], before[i])
				}
			}
			if len(old) == 0 {
				continue // MariaDB logs no row for an update that changed nothing
			}
			w.live[table][id] = after
			k := pkOf(table, after)
			w.expect[k] = append(w.expect[k], expMsg{typ: rowenc.TypeUpdate, data: w.image(table, after), old: mustJSON(old)})
			w.count++
		}
	}
	ids = w.liveIDs(table)
	w.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	if del > len(ids) {
		del = len(ids)
	}
	if del > 0 {
		in := make([]string, del)
		for i, id := range ids[:del] {
			vals := w.live[table][id]
			in[i] = fmt.Sprint(vals[0])
			k := pkOf(table, vals)
			w.expect[k] = append(w.expect[k], expMsg{typ: rowenc.TypeDelete, data: w.image(table, vals)})
			delete(w.live[table], id)
			w.count++
		}
		wavetest.MustExec(t, w.conn, "DELETE FROM "+table+" WHERE id IN ("+strings.Join(in, ",")+")")
	}
	wavetest.MustExec(t, w.conn, "COMMIT")
}

func (w *workload) liveIDs(table string) []int64 {
	ids := make([]int64, 0, len(w.live[table]))
	for id := range w.live[table] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// run writes about n row changes in transactions of about per changes, rotating tables.
func (w *workload) run(n, per int) {
	tables := []string{tOrders, tItems, tLogs}
	for i := 0; w.count < n && !w.stopped.Load(); i++ {
		left := min(per, n-w.count)
		ins := max(1, left*6/10)
		upd := left * 25 / 100
		del := left - ins - upd
		w.txn(tables[i%3], ins, upd, max(del, 0))
	}
}

// received is one message read back from a topic, reduced to what verify compares.
type received struct {
	topic, key               string
	typ, database, table, id string
	data, old                []byte // canonical JSON
	msg                      map[string]any
}

// decodeMsg decodes a row message; full keeps the whole decoded message in msg.
func decodeMsg(t testing.TB, topic string, key, value []byte) received {
	return decode(t, topic, key, value, true)
}

func decode(t testing.TB, topic string, key, value []byte, full bool) received {
	var m struct {
		Type     string          `json:"type"`
		Database string          `json:"database"`
		Table    string          `json:"table"`
		Data     json.RawMessage `json:"data"`
		Old      json.RawMessage `json:"old"`
		PK       json.RawMessage `json:"pk"`
	}
	if err := json.Unmarshal(value, &m); err != nil {
		t.Fatalf("message on %s is not JSON: %v: %.200s", topic, err, value)
	}
	r := received{topic: topic, key: string(key), typ: m.Type, database: m.Database, table: m.Table,
		data: canonical(m.Data), old: canonical(m.Old)}
	r.id = wavetest.PKID(m.PK)
	if full {
		r.msg = decodeJSON(value).(map[string]any)
	}
	return r
}

// verify checks the messages of one topic (in partition order) against the workload's
// expectations for the tables routed there: every expected message present, in order per
// primary key, values exact. Duplicates are allowed only as a repeat of an earlier
// message of the same key (at-least-once), and are counted.
func (w *workload) verify(t testing.TB, msgs []received, tables []string, types []string) (dups int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	got := map[string][]received{}
	for _, r := range msgs {
		if r.database != w.db || r.typ == rowenc.TypeDDL {
			continue
		}
		if !slices.Contains(tables, r.table) {
			t.Fatalf("topic %s carries a row of %s, which its subscription excludes", r.topic, r.table)
		}
		k := r.table + ":" + r.id
		got[k] = append(got[k], r)
	}
	missing, wrong := 0, 0
	for k, exps := range w.expect {
		table := k[:strings.IndexByte(k, ':')]
		if !slices.Contains(tables, table) {
			continue
		}
		var want []expMsg
		for _, e := range exps {
			if types == nil || slices.Contains(types, e.typ) {
				want = append(want, e)
			}
		}
		g := got[k]
		// Walk the received list; a message equal to one already matched is a duplicate.
		j := 0
		for _, m := range g {
			if j < len(want) && matches(m, want[j]) {
				j++
				continue
			}
			dup := false
			for x := 0; x < j; x++ {
				if matches(m, want[x]) {
					dup = true
					break
				}
			}
			if !dup {
				if wrong < 5 {
					e := want[min(j, len(want)-1)]
					t.Errorf("%s: message %d out of order or wrong:\n got  %s %s old %s\n want %s %s old %s", k, j, m.typ, m.data, m.old, e.typ, e.data, e.old)
				}
				wrong++
				continue
			}
			dups++
		}
		if j < len(want) {
			if missing < 5 {
				t.Errorf("%s: %d of %d messages missing; first missing %s %s", k, len(want)-j, len(want), want[j].typ, want[j].data)
			}
			missing += len(want) - j
		}
	}
	if missing > 0 || wrong > 0 {
		t.Fatalf("%d messages missing, %d wrong (of %d received)", missing, wrong, len(msgs))
	}
	return dups
}

func matches(m received, e expMsg) bool {
	if m.typ != e.typ || !bytes.Equal(m.data, e.data) {
		return false
	}
	return e.typ != rowenc.TypeUpdate || bytes.Equal(m.old, e.old)
}

// expected counts the messages the workload expects for tables (and types).
func (w *workload) expected(tables, types []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for k, exps := range w.expect {
		if !slices.Contains(tables, k[:strings.IndexByte(k, ':')]) {
			continue
		}
		for _, e := range exps {
			if types == nil || slices.Contains(types, e.typ) {
				n++
			}
		}
	}
	return n
}
