package wave_test

// The Canal and protobuf formats read by their consumers (issue 35): a real `binlake wave` process
// publishes a table with a column of every type, through a snapshot of its existing rows
// and then inserts, updates, deletes and a DDL, in the subscription's format; the
// consumer its users run reduces the topic to a table state, which must equal a SELECT
// of the table. canal-protobuf and canal-json are read by Canal 1.1.7's own Java client
// (deploy/testenv/canal-consumer, KafkaCanalConnector with flatMessage false and true); protobuf
// by a Go consumer decoding with the generated binlake.v1 types. Each runs as is and
// with a kill -9 of the wave in the middle of the writes (duplicates allowed, nothing lost).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	kafkago "github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
	"github.com/binlake/binlake/wave/rowenc"
	"github.com/binlake/binlake/wave/rowenc/canalpb"
	"github.com/binlake/binlake/wave/rowenc/rowpb"
)

// allTypesDDL is the table of the format tests: every column type the formats handle.
const allTypesDDL = `CREATE TABLE t_all (
  id BIGINT UNSIGNED PRIMARY KEY,
  ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, ii INT, iu INT UNSIGNED,
  bi BIGINT, bu BIGINT UNSIGNED,
  fl FLOAT, db DOUBLE, dc DECIMAL(20,6),
  dt DATETIME(6), ts TIMESTAMP(6) NULL DEFAULT NULL, da DATE, tm TIME, yr YEAR,
  bt BIT(12), en ENUM('small','medium','large'), st SET('a','b','c'),
  js JSON, bl BLOB, vb VARBINARY(16), tx TEXT, vc VARCHAR(64), ch CHAR(8)
) DEFAULT CHARSET=utf8mb4`

// allTypesRow is row i's values as SQL literals: edges of each type, NULLs every fifth
// row, utf8mb4 text, bytes that are not text.
func allTypesRow(i int) string {
	if i%5 == 4 {
		return fmt.Sprintf("(%d, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)", i)
	}
	bi, bu := strconv.Itoa(i*1_000_003), strconv.Itoa(i)
	switch i % 7 {
	case 0:
		bi, bu = "-9223372036854775808", "18446744073709551615"
	case 1:
		bi, bu = "9223372036854775807", "9223372036854775808"
	}
	tm := fmt.Sprintf("'%02d:%02d:%02d'", i%24, i%60, (i*7)%60)
	if i%6 == 0 {
		tm = "'-838:59:59'"
	}
	// FLOAT values of six digits at most: the server prints a FLOAT with six.
	return fmt.Sprintf("(%d, %d, %d, %d, %d, %d, %d, %s, %s, %.1f, %s, '%d.%06d', "+
		"'2026-12-01 10:11:%02d.%06d', '2026-12-01 10:11:%02d.%06d', '%04d-%02d-%02d', %s, %d, "+
		"b'%b', '%s', '%s', '{\"a\": [1, 2.50, \"ü\"], \"n\": %d}', UNHEX('00FF%02X80'), UNHEX('%02X00FE'), "+
		"'emoji 😀 中文 %d', 'q\\'\" \\\\ %d', 'c%d')",
		i, (i*37)%256-128, (i*53)%256, (i*331)%65536-32768, (i*40009)%16777216-8388608, i*1_000_033-2147483648/2, uint32(i)*4294967291,
		bi, bu, float64(i%900)*1.1, strconv.FormatFloat(float64(i)/3, 'g', -1, 64), i*1000-5000, i*17%1000000,
		i%60, i*123457%1000000, (i+1)%60, i*7%1000000, 1000+i*7%9000, 1+i%12, 1+i%28, tm, 1901+i%255,
		(i*97)%4096, []string{"small", "medium", "large"}[i%3], []string{"", "a", "b,c", "a,b,c"}[i%4],
		i, i%256, i%256, i, i, i)
}

// formatConsumer is one format's consumer: it reads topic, which holds n messages, and
// returns the table state it reduced them to, by primary key (the id's text), each row
// by column name (nil: NULL), and the number of DDL messages it read.
type formatConsumer func(t *testing.T, ctx context.Context, brokers, topic string, n int64) (rows map[string]map[string]*string, ddl int)

// TestCanalProtobufConsumerIntegration runs the canal-protobuf topic through Canal's
// own Java client.
func TestCanalProtobufConsumerIntegration(t *testing.T) {
	t.Parallel() // its own database, topics and ZooKeeper root: beside the other long process tests
	cp := testenv.JavaConsumer(t, "deploy/testenv/canal-consumer")
	consume := func(t *testing.T, ctx context.Context, brokers, topic string, n int64) (map[string]map[string]*string, int) {
		canalRowsOnTheirPartitions(t, ctx, brokers, topic)
		return canalJavaConsumer(t, ctx, cp, "protobuf", brokers, topic, n)
	}
	runFormatConsumer(t, rowenc.FormatCanalProtobuf, consume, canalExpect)
}

// canalRowsOnTheirPartitions reads the canal-protobuf topic with kafka-go and checks
// that every row of every message is on the partition its own key goes to (a message
// carries the rows of one rows event that go to one partition: the snapshot's chunk
// and the multi-row UPDATEs make messages of several rows, at least one).
func canalRowsOnTheirPartitions(t *testing.T, ctx context.Context, brokers, topic string) {
	t.Helper()
	var parts []int
	for part := range partitionEnds(t, ctx, brokers, topic) {
		parts = append(parts, part)
	}
	slices.Sort(parts)
	var rows, grouped int
	eachMessage(t, ctx, brokers, topic, func(part int, m kafkago.Message) {
		var p canalpb.Packet
		var ms canalpb.Messages
		if err := proto.Unmarshal(m.Value, &p); err != nil {
			t.Fatalf("message %d/%d: not a Canal packet: %v", part, m.Offset, err)
		}
		if err := proto.Unmarshal(p.GetBody(), &ms); err != nil || len(ms.GetMessages()) != 1 {
			t.Fatalf("message %d/%d: %d entries, %v", part, m.Offset, len(ms.GetMessages()), err)
		}
		var e canalpb.Entry
		var rc canalpb.RowChange
		if err := proto.Unmarshal(ms.GetMessages()[0], &e); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(e.GetStoreValue(), &rc); err != nil {
			t.Fatal(err)
		}
		if len(rc.GetRowDatas()) > 1 {
			grouped++
		}
		for _, rd := range rc.GetRowDatas() {
			cols := rd.GetAfterColumns()
			if len(cols) == 0 {
				cols = rd.GetBeforeColumns()
			}
			key := fmt.Sprintf("%s.%s:[%s]", e.GetHeader().GetSchemaName(), e.GetHeader().GetTableName(), cols[0].GetValue())
			if want := (&kafkago.Murmur2Balancer{}).Balance(kafkago.Message{Key: []byte(key)}, parts...); want != part {
				t.Errorf("row %s in a message on partition %d (message %d, key %s), its key goes to %d", key, part, m.Offset, m.Key, want)
			}
			rows++
		}
	})
	if grouped == 0 {
		t.Errorf("no message of several rows among %d rows on %d partitions", rows, len(parts))
	}
	t.Logf("canal-protobuf: %d rows, %d messages of several rows, each row on its key's partition", rows, grouped)
}

// TestCanalJSONConsumerIntegration runs the canal-json topic through Canal's own Java
// client too (flatMessage=true: fastjson's FlatMessage), beside Flink's reader of it.
func TestCanalJSONConsumerIntegration(t *testing.T) {
	t.Parallel() // its own database, topics and ZooKeeper root: beside the other long process tests
	cp := testenv.JavaConsumer(t, "deploy/testenv/canal-consumer")
	consume := func(t *testing.T, ctx context.Context, brokers, topic string, n int64) (map[string]map[string]*string, int) {
		return canalJavaConsumer(t, ctx, cp, "flat", brokers, topic, n)
	}
	runFormatConsumer(t, rowenc.FormatCanalJSON, consume, canalExpect)
}

// TestProtobufConsumerIntegration runs the protobuf topic through a Go consumer of the
// generated binlake.v1 types.
func TestProtobufConsumerIntegration(t *testing.T) {
	t.Parallel() // its own database, topics and ZooKeeper root: beside the other long process tests
	runFormatConsumer(t, rowenc.FormatProtobuf, protobufGoConsumer, protobufExpect)
}

// runFormatConsumer is the test of one format, as is and with a kill -9.
func runFormatConsumer(t *testing.T, format string, consume formatConsumer, expect func(col string, v cell) *string) {
	for _, kill := range []bool{false, true} {
		name := "as-is"
		if kill {
			name = "kill-9"
		}
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Context(t)
			f := newFaultEnvOn(t, ctx, 35, "fmt", testenv.Require(t, testenv.Kafka))
			conn := wavetest.Connect(t)
			wavetest.MustExec(t, conn, "USE "+f.w.db)
			wavetest.MustExec(t, conn, allTypesDDL)
			const existing, changes = 40, 400
			var vals []string
			for i := 1; i <= existing; i++ {
				vals = append(vals, allTypesRow(i))
			}
			wavetest.MustExec(t, conn, "INSERT INTO t_all VALUES "+strings.Join(vals, ","))

			topic := f.prefix + ".all"
			f.inst.Start = wavetest.CurrentPos(t)
			f.inst.Snapshot = &cluster.SnapshotOptions{Initial: true}
			f.inst.Subscriptions = []cluster.Subscription{{Name: "all", Topic: topic, Format: format,
				Include: []string{regexp.QuoteMeta(f.w.db) + `\.t_all`}}}
			f.topics = []string{topic}
			if _, err := cluster.AddInstance(ctx, f.c, f.inst, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			p := wavetest.StartWave(t, "wave-1", f.config("wave-1", f.brokers), f.env)

			// The changes: inserts of new rows, updates of existing ones (to other values
			// and to NULLs), deletes, and an ALTER TABLE half-way.
			next := existing + 1
			for c := range changes {
				switch {
				case c == changes/2:
					wavetest.MustExec(t, conn, "ALTER TABLE t_all ADD COLUMN extra VARCHAR(16) NULL AFTER id")
				case c > changes/2 && c%10 == 0:
					wavetest.MustExec(t, conn, fmt.Sprintf("UPDATE t_all SET extra = 'x%d' WHERE id %% 3 = %d", c, c%3))
				case c%4 == 1:
					id := 1 + (c*7)%(next-1)
					wavetest.MustExec(t, conn, fmt.Sprintf("REPLACE INTO t_all (%s) VALUES %s", allTypesColumns, reID(allTypesRow(id+c), id)))
				case c%9 == 3:
					wavetest.MustExec(t, conn, fmt.Sprintf("DELETE FROM t_all WHERE id = %d", 1+(c*11)%(next-1)))
				case c%4 == 2:
					wavetest.MustExec(t, conn, fmt.Sprintf("UPDATE t_all SET vc = CONCAT(vc, 'u'), dc = dc + 1, js = JSON_SET(js, '$.u', %d), tu = 255 WHERE id = %d", c, 1+(c*13)%(next-1)))
				default:
					wavetest.MustExec(t, conn, "INSERT INTO t_all ("+allTypesColumns+") VALUES "+allTypesRow(next))
					next++
				}
				if kill && c == changes*2/5 {
					f.waitFor("the snapshot done", func() bool { o := f.offset(); return o.Snapshot != nil && o.Snapshot.Done }, p)
					p.Kill(t)
					p = wavetest.StartWave(t, "wave-1", f.config("wave-1", f.brokers), f.env)
				}
			}
			end := wavetest.CurrentPos(t)
			f.waitFor("the snapshot done and the offset past the writes", func() bool {
				o := f.offset()
				return o.Snapshot != nil && o.Snapshot.Done && wavetest.Covers(t, o.GTIDSet, end.GTIDSet)
			}, p)
			n := sum(f.messages())

			got, ddl := consume(t, ctx, f.brokers, topic, n)
			if ddl < 1 {
				t.Errorf("the consumer read %d DDL messages, want the ALTER TABLE", ddl)
			}
			want := selectAllTypes(t, conn)
			compareStates(t, got, want, expect)
			t.Logf("%s: %d messages decoded; the consumer's state equals the table (%d rows)", format, n, len(want))
		})
	}
}

// allTypesColumns are allTypesDDL's columns before the ALTER, for inserts after it.
const allTypesColumns = "id, ti, tu, si, mi, ii, iu, bi, bu, fl, db, dc, dt, ts, da, tm, yr, bt, en, st, js, bl, vb, tx, vc, ch"

// reID replaces the id of a row of allTypesRow by id.
func reID(row string, id int) string {
	i := strings.IndexByte(row, ',')
	return fmt.Sprintf("(%d%s", id, row[i:])
}

// cell is one column of a SELECT of t_all: its text (nil: NULL) and, for BIT, ENUM and
// SET, its number (col+0).
type cell struct {
	text *string
	num  *string
}

// selectAllTypes reads t_all as the formats' conventions need it, timestamps in UTC.
func selectAllTypes(t *testing.T, conn *client.Conn) map[string]map[string]cell {
	t.Helper()
	wavetest.MustExec(t, conn, "SET time_zone = '+00:00'")
	r, err := conn.Execute("SELECT *, bt+0, en+0, st+0 FROM t_all")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cols := map[string]int{}
	for i, f := range r.Fields {
		cols[string(f.Name)] = i
	}
	str := func(row, col int) *string {
		v, _ := r.GetValue(row, col)
		if v == nil {
			return nil
		}
		s, _ := r.GetString(row, col)
		return &s
	}
	out := map[string]map[string]cell{}
	for i := range r.RowNumber() {
		row := map[string]cell{}
		for _, f := range r.Fields[:len(r.Fields)-3] {
			name := string(f.Name)
			c := cell{text: str(i, cols[name])}
			if num, ok := cols[name+"+0"]; ok {
				c.num = str(i, num)
			}
			row[name] = c
		}
		out[*row["id"].text] = row
	}
	return out
}

// compareStates fails unless the consumer's rows are the table's, each column as expect
// renders the table's value for the format; floats compare as numbers, JSON documents
// as JSON. A column the consumer never saw (rows not changed since the ALTER added it)
// counts as NULL.
func compareStates(t *testing.T, got map[string]map[string]*string, want map[string]map[string]cell, expect func(string, cell) *string) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for id, row := range want {
		g, ok := got[id]
		if !ok {
			report("row %s: missing downstream", id)
			continue
		}
		for col, c := range row {
			w := expect(col, c)
			gv, seen := g[col]
			if !seen && w == nil {
				continue
			}
			if !sameCell(col, gv, w) {
				report("row %s column %s: downstream %s, the table %s", id, col, show(gv), show(w))
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			report("row %s: downstream, not in the table", id)
		}
	}
	if bad > 0 {
		t.Fatalf("the consumer's state differs from the table in %d places (%d rows downstream, %d in the table)", bad, len(got), len(want))
	}
}

// sameCell compares one value: FLOAT and DOUBLE as numbers (the table's text is the
// server's, the consumer's its format's), JSON as documents.
func sameCell(col string, got, want *string) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	switch col {
	case "fl", "db":
		a, errA := strconv.ParseFloat(*got, 64)
		b, errB := strconv.ParseFloat(*want, 64)
		if col == "fl" {
			return errA == nil && errB == nil && float32(a) == float32(b)
		}
		return errA == nil && errB == nil && (a == b || math.Abs(a-b) <= 1e-15*math.Abs(b))
	case "js":
		var a, b any
		return json.Unmarshal([]byte(*got), &a) == nil && json.Unmarshal([]byte(*want), &b) == nil && fmt.Sprint(a) == fmt.Sprint(b)
	}
	return *got == *want
}

// canalExpect renders a table value as Canal's text: BIT, ENUM and SET as their numbers
// (Canal sends ENUM's index and SET's bits), binary columns as the ISO-8859-1 text of
// their bytes (which canalJavaConsumer turns back into bytes: the same here).
func canalExpect(col string, c cell) *string {
	switch col {
	case "bt", "en", "st":
		return c.num
	}
	return c.text
}

// protobufExpect renders a table value as the protobuf format's Field, in the text
// protobufGoConsumer makes of it: DATETIME and TIMESTAMP in ISO 8601 (a TIMESTAMP in
// UTC with a 'Z'), BIT as its number, ENUM and SET by name.
func protobufExpect(col string, c cell) *string {
	if c.text == nil {
		return nil
	}
	switch col {
	case "bt":
		return c.num
	case "dt", "ts":
		s := strings.Replace(*c.text, " ", "T", 1)
		if col == "ts" {
			s += "Z"
		}
		return &s
	}
	return c.text
}

// canalJavaConsumer runs deploy/testenv/canal-consumer's CanalState (Canal's
// KafkaCanalConnector) on topic until it has read n messages, and returns its state;
// binary values come back from Canal's ISO-8859-1 text to their bytes.
func canalJavaConsumer(t *testing.T, ctx context.Context, cp, mode, brokers, topic string, n int64) (map[string]map[string]*string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "java", "-cp", cp, "io.binlake.canalcheck.CanalState", brokers, topic, mode, strconv.FormatInt(n, 10), "180")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out struct {
		Messages int64                            `json:"messages"`
		DDL      int                              `json:"ddl"`
		Columns  map[string]struct{ SQLType int } `json:"columns"`
		Rows     map[string]map[string]*string    `json:"rows"`
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil || err != nil {
		t.Fatalf("Canal's consumer: %v (output %v)\nstdout: %.2000s\nstderr: %.4000s", err, jerr, stdout.String(), stderr.String())
	}
	if out.Messages != n {
		t.Fatalf("Canal's consumer decoded %d of the topic's %d messages", out.Messages, n)
	}
	for col, c := range out.Columns {
		if c.SQLType != 2004 { // java.sql.Types.BLOB: bytes as ISO-8859-1 text
			continue
		}
		for _, row := range out.Rows {
			if v := row[col]; v != nil {
				b := make([]byte, 0, len(*v))
				for _, r := range *v {
					b = append(b, byte(r))
				}
				s := string(b)
				row[col] = &s
			}
		}
	}
	return out.Rows, out.DDL
}

// protobufGoConsumer reads the topic's n messages with kafka-go, decodes each with the
// generated binlake.v1.Row and reduces them to a state (a row's changes are in order on
// its partition).
func protobufGoConsumer(t *testing.T, ctx context.Context, brokers, topic string, n int64) (map[string]map[string]*string, int) {
	t.Helper()
	rows := map[string]map[string]*string{}
	ddl := 0
	var read int64
	eachMessage(t, ctx, brokers, topic, func(part int, m kafkago.Message) {
		read++
		var row rowpb.Row
		if err := proto.Unmarshal(m.Value, &row); err != nil {
			t.Fatalf("message %d/%d: not a binlake.v1.Row: %v", part, m.Offset, err)
		}
		switch row.GetType() {
		case rowpb.Type_TYPE_DDL:
			ddl++
			return
		case rowpb.Type_TYPE_DELETE:
			delete(rows, pkText(t, &row))
			return
		}
		state := map[string]*string{}
		for _, f := range row.GetData() {
			state[f.GetName()] = fieldText(f)
		}
		rows[pkText(t, &row)] = state
	})
	if read != n {
		t.Fatalf("the Go consumer decoded %d of the topic's %d messages", read, n)
	}
	return rows, ddl
}

// eachMessage reads every message the topic holds now, partition by partition, each
// partition's in order, and hands each to fn.
func eachMessage(t *testing.T, ctx context.Context, brokers, topic string, fn func(part int, m kafkago.Message)) {
	t.Helper()
	for part, end := range partitionEnds(t, ctx, brokers, topic) {
		r := wavetest.PartitionReader(brokers, topic, part)
		for off := int64(0); off < end; {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("read %s/%d at %d of %d: %v", topic, part, off, end, err)
			}
			off = m.Offset + 1
			fn(part, m)
		}
		r.Close()
	}
}

// partitionEnds is each partition's high watermark.
func partitionEnds(t *testing.T, ctx context.Context, brokers, topic string) map[int]int64 {
	t.Helper()
	c := &kafkago.Client{Addr: kafkago.TCP(strings.Split(brokers, ",")...), Timeout: 10 * time.Second, Transport: &kafkago.Transport{}}
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil {
		t.Fatalf("metadata of %s: %v %+v", topic, err, md)
	}
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, p := range md.Topics[0].Partitions {
		req.Topics[topic] = append(req.Topics[topic], kafkago.LastOffsetOf(p.ID))
	}
	resp, err := c.ListOffsets(ctx, req)
	if err != nil {
		t.Fatalf("list offsets of %s: %v", topic, err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		out[p.Partition] = p.LastOffset
	}
	return out
}

func pkText(t *testing.T, r *rowpb.Row) string {
	t.Helper()
	if len(r.GetPk()) != 1 {
		t.Fatalf("row of %s.%s with %d key columns", r.GetDatabase(), r.GetTable(), len(r.GetPk()))
	}
	return *fieldText(r.GetPk()[0])
}

// fieldText is a Field's value as text: numbers in decimal, bytes as they are.
func fieldText(f *rowpb.Field) *string {
	var s string
	switch v := f.GetValue().(type) {
	case *rowpb.Field_Null:
		return nil
	case *rowpb.Field_Int:
		s = strconv.FormatInt(v.Int, 10)
	case *rowpb.Field_Uint:
		s = strconv.FormatUint(v.Uint, 10)
	case *rowpb.Field_Float:
		s = strconv.FormatFloat(float64(v.Float), 'g', -1, 32)
	case *rowpb.Field_Double:
		s = strconv.FormatFloat(v.Double, 'g', -1, 64)
	case *rowpb.Field_String_:
		s = v.String_
	case *rowpb.Field_Bytes:
		s = string(v.Bytes)
	case *rowpb.Field_Json:
		s = v.Json
	}
	return &s
}

// show renders a nullable cell for a failure message.
func show(s *string) string {
	if s == nil {
		return "NULL"
	}
	return strconv.Quote(*s)
}
