package rowenc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// testColumn is a column of a table built for go-mysql's parser: its wire type, the
// table-map metadata, and what the schema would add (signedness, binary, JSON).
type testColumn struct {
	tp       byte
	meta     uint16
	unsigned bool
	binary   bool
	json     bool
}

// eventKinds are the column kinds the fuzz tests draw from, with valid metadata; the
// fuzzer varies the metadata bytes around them.
var eventKinds = []testColumn{
	{tp: mysql.MYSQL_TYPE_TINY}, {tp: mysql.MYSQL_TYPE_SHORT}, {tp: mysql.MYSQL_TYPE_INT24},
	{tp: mysql.MYSQL_TYPE_LONG}, {tp: mysql.MYSQL_TYPE_LONGLONG}, {tp: mysql.MYSQL_TYPE_YEAR},
	{tp: mysql.MYSQL_TYPE_FLOAT, meta: 4}, {tp: mysql.MYSQL_TYPE_DOUBLE, meta: 8},
	{tp: mysql.MYSQL_TYPE_NEWDECIMAL, meta: 20<<8 | 4}, {tp: mysql.MYSQL_TYPE_DATE},
	{tp: mysql.MYSQL_TYPE_TIME2, meta: 3}, {tp: mysql.MYSQL_TYPE_DATETIME2, meta: 6},
	{tp: mysql.MYSQL_TYPE_TIMESTAMP2, meta: 2}, {tp: mysql.MYSQL_TYPE_BIT, meta: 1<<8 | 4},
	{tp: mysql.MYSQL_TYPE_VARCHAR, meta: 64}, {tp: mysql.MYSQL_TYPE_VARCHAR, meta: 1024},
	{tp: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_STRING)<<8 | 8},
	{tp: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1},
	{tp: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_SET)<<8 | 1},
	{tp: mysql.MYSQL_TYPE_BLOB, meta: 2}, {tp: mysql.MYSQL_TYPE_GEOMETRY, meta: 4},
}

// testEvents is a parser fed a format description and one table map: it parses rows
// events of that table as the capture's syncer does (rows left undecoded).
type testEvents struct {
	p     *replication.BinlogParser
	cols  []testColumn
	table *Table
}

const testTableID = 42

func newTestEvents(t testing.TB, cols []testColumn) *testEvents {
	p := replication.NewBinlogParser()
	p.SetParseTime(true)
	p.SetTimestampStringLocation(time.UTC)
	p.SetRowsEventDecodeFunc(DecodeHeader)
	fde := binary.LittleEndian.AppendUint16(nil, 4)
	var version [50]byte
	copy(version[:], "5.5.0-binlake-test") // before checksums: no CRC32 to append
	fde = append(fde, version[:]...)
	fde = binary.LittleEndian.AppendUint32(fde, 0)
	fde = append(fde, replication.EventHeaderSize)
	fde = append(fde, bytes.Repeat([]byte{8}, 40)...) // post-header lengths: 6-byte table ids
	if _, err := p.Parse(testEvent(replication.FORMAT_DESCRIPTION_EVENT, fde)); err != nil {
		t.Fatalf("format description: %v", err)
	}
	tm := binary.LittleEndian.AppendUint64(nil, testTableID)[:6]
	tm = append(tm, 0, 0, 2, 'd', 'b', 0, 1, 't', 0, byte(len(cols)))
	var meta []byte
	for _, c := range cols {
		tm = append(tm, c.tp)
		switch c.tp {
		case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_NEWDECIMAL:
			meta = append(meta, byte(c.meta>>8), byte(c.meta))
		case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_BIT:
			meta = binary.LittleEndian.AppendUint16(meta, c.meta)
		case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_GEOMETRY,
			mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
			meta = append(meta, byte(c.meta))
		}
	}
	tm = append(tm, byte(len(meta)))
	tm = append(tm, meta...)
	tm = append(tm, bytes.Repeat([]byte{0xff}, (len(cols)+7)/8)...) // every column nullable
	ev, err := p.Parse(testEvent(replication.TABLE_MAP_EVENT, tm))
	if err != nil {
		t.Fatalf("table map: %v", err)
	}
	tme := ev.Event.(*replication.TableMapEvent)
	tb := &Table{Database: "db", Name: "t", Columns: make([]Column, len(cols)), PK: []int{0}}
	tb.inPlace = true
	for i, c := range cols {
		col := &tb.Columns[i]
		col.Name = fmt.Sprintf("c%d", i)
		col.Type = ColumnType(tme, i)
		col.Unsigned, col.Binary, col.JSON = c.unsigned, c.binary, c.json
		col.Enum, col.Set = []string{"small", "medium", "large"}, []string{"a", "b", "c"}
		if col.Type == mysql.MYSQL_TYPE_DATETIME2 || col.Type == mysql.MYSQL_TYPE_TIMESTAMP2 || col.Type == mysql.MYSQL_TYPE_TIME2 {
			col.Frac = uint8(tme.ColumnMeta[i])
		}
		col.Pad = CharLength(tme, i)
		col.raw = newRawCol(tme.ColumnType[i], tme.ColumnMeta[i])
		tb.inPlace = tb.inPlace && col.raw.kind != rawNone
	}
	tb.Columns[0].PK = true
	tb.Prepare()
	tb.tm = tme
	return &testEvents{p: p, cols: cols, table: tb}
}

func testEvent(et replication.EventType, body []byte) []byte {
	ev := binary.LittleEndian.AppendUint32(nil, 1764583872)
	ev = append(ev, byte(et))
	ev = binary.LittleEndian.AppendUint32(ev, 1)
	ev = binary.LittleEndian.AppendUint32(ev, uint32(replication.EventHeaderSize+len(body)))
	ev = binary.LittleEndian.AppendUint32(ev, 4)
	ev = binary.LittleEndian.AppendUint16(ev, 0)
	ev = append(ev, body...)
	// No room past the end: go-mysql slices a DECIMAL by its packed size, so in a cut
	// event it would read the spare capacity as digits where it should fail.
	return ev[:len(ev):len(ev)]
}

// rowsEvent parses a v2 rows event of type et whose rows are the bytes rows.
func (te *testEvents) rowsEvent(t testing.TB, et replication.EventType, rows []byte) (*replication.RowsEvent, error) {
	n := len(te.cols)
	body := binary.LittleEndian.AppendUint64(nil, testTableID)[:6]
	body = append(body, 0, 0, 2, 0, byte(n))
	body = append(body, bytes.Repeat([]byte{0xff}, (n+7)/8)...)
	if et == replication.UPDATE_ROWS_EVENTv2 {
		body = append(body, bytes.Repeat([]byte{0xff}, (n+7)/8)...)
	}
	ev, err := te.p.Parse(testEvent(et, append(body, rows...)))
	if err != nil {
		return nil, err
	}
	return ev.Event.(*replication.RowsEvent), nil
}

// encodeBoth encodes a rows event's messages by reading it in place and by go-mysql's
// decoding; an error is what stopped each.
func (te *testEvents) encodeBoth(t testing.TB, et replication.EventType, rows []byte) (inPlace, decoded []byte, errIn, errDec error) {
	typ := map[replication.EventType]string{replication.WRITE_ROWS_EVENTv2: TypeInsert,
		replication.UPDATE_ROWS_EVENTv2: TypeUpdate, replication.DELETE_ROWS_EVENTv2: TypeDelete}[et]
	e, err := te.rowsEvent(t, et, rows)
	if err != nil {
		return nil, nil, err, err
	}
	u, ok := undecodedOf(e)
	if !ok || !readableInPlace(et, e, te.table) {
		t.Fatalf("rows event not readable in place (table %+v)", te.cols)
	}
	m := Meta{Instance: "i", TS: 1, File: "f", Pos: 4}
	_, raws, errIn := readImages(nil, nil, u.data[u.pos:], te.table, typ)
	if errIn == nil {
		inPlace, errIn = encodeImages(nil, te.table, typ, m, raws)
	}
	if errIn == nil {
		inPlace, errIn = appendCanalMessages(inPlace, te.table, typ, m, Rows{raw: raws})
	}
	if errDec = newRowsDecoder().decodeRows(e, u); errDec == nil {
		rows := make([]values, len(e.Rows))
		for i := range e.Rows {
			rows[i] = e.Rows[i]
		}
		if decoded, errDec = encodeImages(nil, te.table, typ, m, rows); errDec == nil {
			decoded, errDec = appendCanalMessages(decoded, te.table, typ, m, Rows{rows: rows})
		}
	}
	return inPlace, decoded, errIn, errDec
}

// appendCanalMessages appends the canal-protobuf messages of a rows event's images,
// one per row and grouped on 3 partitions, in hex, one per line: in place, most of
// their values are written straight from the fields (appendCanalDirect), from go-mysql's
// values rendered as canal-json's.
func appendCanalMessages(out []byte, t *Table, typ string, m Meta, rows Rows) ([]byte, error) {
	f, err := NewFormat(FormatCanalProtobuf, nil)
	if err != nil {
		return out, err
	}
	var e Encoder
	msgs, err := e.Encode(&Event{Table: t, Type: typ, Meta: m, Rows: rows},
		[]Target{{By: PartitionPK, Format: f}, {By: PartitionPK, Format: f, Partition: kafkaPartition(3)}}, true, 9, nil)
	if err != nil {
		return out, err
	}
	for _, msg := range msgs {
		out = fmt.Appendf(out, "canal-protobuf %d %d %s %x\n", msg.By, msg.Rows, msg.Key, msg.Value)
	}
	return out, nil
}

// expectBoth encodes a rows event both ways and fails unless both succeed alike and
// the messages contain want.
func (te *testEvents) expectBoth(t *testing.T, et replication.EventType, rows []byte, want string) {
	t.Helper()
	inPlace, decoded, errIn, errDec := te.encodeBoth(t, et, rows)
	if errIn != nil || errDec != nil {
		t.Fatalf("in place: %v, go-mysql: %v", errIn, errDec)
	}
	if !bytes.Equal(inPlace, decoded) {
		t.Fatalf("in place:\n%s\ngo-mysql:\n%s", inPlace, decoded)
	}
	if !bytes.Contains(inPlace, []byte(want)) {
		t.Fatalf("message %s lacks %s", inPlace, want)
	}
}

// encodeImages appends every message and key of a rows event's images to out, one per
// line.
func encodeImages[I rowImage[I]](out []byte, t *Table, typ string, m Meta, images []I) ([]byte, error) {
	step := 1
	if typ == TypeUpdate {
		step = 2
	}
	for i := 0; i+step <= len(images); i += step {
		var before, after I
		switch typ {
		case TypeInsert:
			after = images[i]
		case TypeDelete:
			before = images[i]
		default:
			before, after = images[i], images[i+1]
		}
		var err error
		out = appendHeader(out, t.names, t.Database, t.Name, typ, m)
		if out, err = encodeRow(out, t, before, after); err != nil {
			return out, err
		}
		image := after
		if image.isNil() {
			image = before
		}
		out = append(out, '\t')
		out = append(appendKey(out, t, PartitionPK, image), '\n')
	}
	return out, nil
}

// rowBytes turns fuzz bytes into row images for cols: per column a null bit and then
// the field, fixed-width bytes or a length and that many bytes, as a server lays them
// out, with whatever values the bytes give.
func rowBytes(cols []testColumn, table *Table, images int, src []byte) []byte {
	next := func() byte {
		if len(src) == 0 {
			return 0
		}
		b := src[0]
		src = src[1:]
		return b
	}
	var out []byte
	for range images {
		nulls := make([]byte, (len(cols)+7)/8)
		for i := range cols {
			if next()%5 == 0 {
				nulls[i/8] |= 1 << (i % 8)
			}
		}
		out = append(out, nulls...)
		for i := range cols {
			if nulls[i/8]&(1<<(i%8)) != 0 {
				continue
			}
			rc := table.Columns[i].raw
			switch rc.kind {
			case rawString, rawBlob:
				n := int(next() % 40)
				out = binary.LittleEndian.AppendUint64(out, uint64(n))[:len(out)+int(rc.width)]
				for range n {
					out = append(out, next())
				}
			default:
				for range rc.width {
					out = append(out, next())
				}
			}
		}
	}
	return out
}

// FuzzRawAsDecoded checks that reading rows in place gives the messages go-mysql's
// decoding gives, byte for byte, for any table of the kinds read in place and any
// field values (including what no server writes), and that neither way panics: when
// go-mysql refuses an event, reading in place refuses it too.
func FuzzRawAsDecoded(f *testing.F) {
	f.Add([]byte{0, 4, 9, 11, 14, 17, 19}, []byte("\x01\x02\x03 some bytes \xff\x80\x00 of a row"), uint8(0), uint8(0), uint8(0))
	f.Add([]byte{8, 10, 12, 13, 15, 16, 18, 20}, bytes.Repeat([]byte{0x80, 0x7f, 3}, 40), uint8(1), uint8(7), uint8(0))
	f.Add([]byte{1, 2, 3, 5, 6, 7}, bytes.Repeat([]byte{0xff, 0}, 30), uint8(2), uint8(3), uint8(5))
	for op := range uint8(3) {
		kinds, src := invalidDatesSeed()
		f.Add(kinds, src, op, uint8(0), uint8(0))
	}
	f.Fuzz(func(t *testing.T, kinds, src []byte, op, flags, cut uint8) {
		if len(kinds) == 0 || len(kinds) > 24 {
			return
		}
		cols := fuzzColumns(kinds, flags)
		for i, k := range kinds {
			if flags&8 != 0 && k >= byte(len(eventKinds)) { // other metadata of the same type
				cols[i].meta ^= uint16(k)
			}
		}
		te := newTestEvents(t, cols)
		if !te.table.inPlace {
			return // metadata go-mysql decodes itself
		}
		et := []replication.EventType{replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2}[op%3]
		images := 2
		if et == replication.UPDATE_ROWS_EVENTv2 {
			images = 4
		}
		rows := rowBytes(cols, te.table, images, src)
		rows = rows[:len(rows)-min(int(cut%8), len(rows))] // cut: an event that ends inside a row
		inPlace, decoded, errIn, errDec := te.encodeBoth(t, et, rows)
		switch {
		case errDec != nil && errIn != nil:
			return // refused both ways
		case errDec != nil:
			t.Fatalf("go-mysql refused the event (%v), reading in place gave\n%s", errDec, inPlace)
		case errIn != nil:
			t.Fatalf("reading in place failed (%v), go-mysql gave\n%s", errIn, decoded)
		case !bytes.Equal(inPlace, decoded):
			t.Fatalf("in place:\n%s\ngo-mysql:\n%s", inPlace, decoded)
		}
	})
}

// invalidDatesSeed is a fuzz seed of a table (BIGINT, DATETIME(6), DATE, TIMESTAMP(2))
// whose rows hold dates MySQL and MariaDB store under ALLOW_INVALID_DATES: four images
// of 2024-02-30 10:00:00.500000, 2023-02-29, 2024-04-31 and 2100-02-29, as rowBytes
// reads them from src.
func invalidDatesSeed() (kinds, src []byte) {
	be := func(v uint64, n int) []byte { return binary.BigEndian.AppendUint64(nil, v)[8-n:] }
	dates := [][3]uint64{{2024, 2, 30}, {2023, 2, 29}, {2024, 4, 31}, {2100, 2, 29}}
	for i := range 4 {
		d := dates[i]
		src = append(src, 1, 1, 1, 1) // no column NULL
		src = binary.LittleEndian.AppendUint64(src, uint64(i))
		src = append(src, be(datetimeIntOffset+datetimeBits(int64(d[0]), int64(d[1]), int64(d[2]), 10, 0, 0), 5)...)
		src = append(src, be(500_000, 3)...)
		src = append(src, binary.LittleEndian.AppendUint32(nil, uint32(d[0]<<9|d[1]<<5|d[2]))[:3]...)
		src = append(src, be(1700000000, 4)...)
		src = append(src, 50)
	}
	return []byte{4, 11, 9, 12}, src
}

// TestRawAsDecodedValues pins the values the fuzz seeds do not reach by chance: each
// kind's edges as a server writes them, through both ways.
func TestRawAsDecodedValues(t *testing.T) {
	be := func(v uint64, n int) []byte { return binary.BigEndian.AppendUint64(nil, v)[8-n:] }
	tests := []struct {
		name  string
		col   testColumn
		field []byte
		want  string
	}{
		{"tinyint -1", testColumn{tp: mysql.MYSQL_TYPE_TINY}, []byte{0xff}, `-1`},
		{"tinyint unsigned 255", testColumn{tp: mysql.MYSQL_TYPE_TINY, unsigned: true}, []byte{0xff}, `255`},
		{"mediumint -8388608", testColumn{tp: mysql.MYSQL_TYPE_INT24}, []byte{0, 0, 0x80}, `-8388608`},
		{"bigint unsigned max", testColumn{tp: mysql.MYSQL_TYPE_LONGLONG, unsigned: true}, bytes.Repeat([]byte{0xff}, 8), `18446744073709551615`},
		{"year 2026", testColumn{tp: mysql.MYSQL_TYPE_YEAR}, []byte{126}, `2026`},
		{"decimal -1234.5000", testColumn{tp: mysql.MYSQL_TYPE_NEWDECIMAL, meta: 10<<8 | 4}, decimalField(t, "-1234.5000", 10, 4), `"-1234.5000"`},
		{"decimal 0.0001", testColumn{tp: mysql.MYSQL_TYPE_NEWDECIMAL, meta: 20<<8 | 4}, decimalField(t, "0.0001", 20, 4), `"0.0001"`},
		{"decimal 12345678901234.123456", testColumn{tp: mysql.MYSQL_TYPE_NEWDECIMAL, meta: 20<<8 | 6}, decimalField(t, "12345678901234.123456", 20, 6), `"12345678901234.123456"`},
		{"date", testColumn{tp: mysql.MYSQL_TYPE_DATE}, binary.LittleEndian.AppendUint32(nil, 2026<<9|12<<5|1)[:3], `"2026-12-01"`},
		{"datetime(6)", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2, meta: 6}, append(be(datetimeIntOffset+datetimeBits(2026, 12, 1, 10, 11, 12), 5), be(123456, 3)...), `"2026-12-01T10:11:12.123456"`},
		{"datetime before 1970", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2}, be(datetimeIntOffset+datetimeBits(1000, 1, 1, 0, 0, 0), 5), `"1000-01-01T00:00:00"`},
		{"datetime zero", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2, meta: 2}, append(be(datetimeIntOffset, 5), 0), `"0000-00-00T00:00:00.00"`},
		// ALLOW_INVALID_DATES: stored as written, and published so, not moved to March.
		{"datetime(1) February 30th", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2, meta: 1}, append(be(datetimeIntOffset+datetimeBits(2024, 2, 30, 10, 0, 0), 5), 50), `"2024-02-30T10:00:00.5"`},
		{"datetime February 29th, not a leap year", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2}, be(datetimeIntOffset+datetimeBits(2023, 2, 29, 0, 0, 0), 5), `"2023-02-29T00:00:00"`},
		{"datetime(6) November 31st", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2, meta: 6}, append(be(datetimeIntOffset+datetimeBits(2025, 11, 31, 23, 59, 59), 5), be(999999, 3)...), `"2025-11-31T23:59:59.999999"`},
		{"datetime zero day", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2}, be(datetimeIntOffset+datetimeBits(2024, 5, 0, 1, 2, 3), 5), `"2024-05-00T01:02:03"`},
		{"date February 31st", testColumn{tp: mysql.MYSQL_TYPE_DATE}, binary.LittleEndian.AppendUint32(nil, 2024<<9|2<<5|31)[:3], `"2024-02-31"`},
		{"timestamp(3)", testColumn{tp: mysql.MYSQL_TYPE_TIMESTAMP2, meta: 3}, append(be(1764583872, 4), be(3450, 2)...), `"2025-12-01T10:11:12.345Z"`},
		{"timestamp(6) epoch with a fraction", testColumn{tp: mysql.MYSQL_TYPE_TIMESTAMP2, meta: 6}, append(be(0, 4), be(1, 3)...), `"1970-01-01T00:00:00.000001Z"`},
		{"timestamp(2) epoch with a fraction", testColumn{tp: mysql.MYSQL_TYPE_TIMESTAMP2, meta: 2}, append(be(0, 4), 50), `"1970-01-01T00:00:00.50Z"`},
		{"timestamp(6) zero", testColumn{tp: mysql.MYSQL_TYPE_TIMESTAMP2, meta: 6}, append(be(0, 4), be(0, 3)...), `"0000-00-00T00:00:00.000000"`},
		{"time(3) negative", testColumn{tp: mysql.MYSQL_TYPE_TIME2, meta: 3}, append(be(timeIntOffset-(838<<12|59<<6|59), 3), 0, 0), `"-838:59:59.000"`},
		{"time(6) zero fraction", testColumn{tp: mysql.MYSQL_TYPE_TIME2, meta: 6}, be(timeFullOffset+(12<<12|34<<6|56)<<24, 6), `"12:34:56.000000"`},
		{"time(2) zero", testColumn{tp: mysql.MYSQL_TYPE_TIME2, meta: 2}, append(be(timeIntOffset, 3), 0), `"00:00:00.00"`},
		{"time(1) half", testColumn{tp: mysql.MYSQL_TYPE_TIME2, meta: 1}, append(be(timeIntOffset+1, 3), 50), `"00:00:01.5"`},
		{"time zero", testColumn{tp: mysql.MYSQL_TYPE_TIME2}, be(timeIntOffset, 3), `"00:00:00"`},
		{"bit(12)", testColumn{tp: mysql.MYSQL_TYPE_BIT, meta: 1<<8 | 4}, []byte{0x0a, 0xaa}, `2730`},
		{"enum", testColumn{tp: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1}, []byte{2}, `"medium"`},
		{"set", testColumn{tp: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_SET)<<8 | 1}, []byte{5}, `"a,c"`},
		{"varchar", testColumn{tp: mysql.MYSQL_TYPE_VARCHAR, meta: 300}, append([]byte{4, 0}, "é\"x"...), `"é\"x"`},
		{"varbinary", testColumn{tp: mysql.MYSQL_TYPE_VARCHAR, meta: 16, binary: true}, []byte{3, 0, 1, 2}, `"AAEC"`},
		{"binary(4) padded", testColumn{tp: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_STRING)<<8 | 4, binary: true}, []byte{1, 'a'}, `"YQAAAA=="`},
		{"binary(4) whole", testColumn{tp: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_STRING)<<8 | 4, binary: true}, []byte{4, 1, 2, 3, 4}, `"AQIDBA=="`},
		{"json text", testColumn{tp: mysql.MYSQL_TYPE_BLOB, meta: 4, json: true}, append([]byte{10, 0, 0, 0}, `{"a": [1]}`...), `{"a":[1]}`},
		{"double", testColumn{tp: mysql.MYSQL_TYPE_DOUBLE, meta: 8}, binary.LittleEndian.AppendUint64(nil, 0x400921fb54442d18), `3.141592653589793`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cols := []testColumn{{tp: mysql.MYSQL_TYPE_LONG}, tc.col}
			te := newTestEvents(t, cols)
			row := append([]byte{0, 7, 0, 0, 0}, tc.field...)
			te.expectBoth(t, replication.WRITE_ROWS_EVENTv2, row, `"c1":`+tc.want+`}`)
		})
	}
}

// datetimeBits is a DATETIME2's integer part before MySQL's offset.
func datetimeBits(year, month, day, hour, minute, second int64) uint64 {
	ym := year*13 + month
	return uint64(((ym<<5|day)<<17 | hour<<12 | minute<<6 | second))
}

// decimalField packs a decimal as MySQL does: nine digits per four big-endian bytes,
// fewer bytes for the leftover digits, the top bit set for a positive value and every
// bit inverted for a negative one. The tests read it back through go-mysql too.
func decimalField(t testing.TB, s string, prec, scale int) []byte {
	t.Helper()
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	intPart, frac, _ := bytes.Cut([]byte(s), []byte("."))
	for len(frac) < scale {
		frac = append(frac, '0')
	}
	intg := prec - scale
	digits := fmt.Sprintf("%0*s", intg, intPart)
	var out []byte
	put := func(d string) {
		v, err := strconv.ParseUint(d, 10, 64)
		if err != nil {
			t.Fatalf("decimal digits %q: %v", d, err)
		}
		out = append(out, binary.BigEndian.AppendUint64(nil, v)[8-decimalDigitBytes[len(d)%9]-len(d)/9*4:]...)
	}
	if lead := intg % 9; lead > 0 {
		put(digits[:lead])
	}
	for i := intg % 9; i < intg; i += 9 {
		put(digits[i : i+9])
	}
	for i := 0; i+9 <= scale; i += 9 {
		put(string(frac[i : i+9]))
	}
	if rest := scale % 9; rest > 0 {
		put(string(frac[scale-rest:]))
	}
	out[0] |= 0x80
	if neg {
		for i := range out {
			out[i] ^= 0xff
		}
	}
	return out
}

// TestRawAsDecodedUpdates pins how an update's "old" object compares a column's two
// fields read in place against sameValue's rules for go-mysql's values.
func TestRawAsDecodedUpdates(t *testing.T) {
	le := func(v uint64, n int) []byte { return binary.LittleEndian.AppendUint64(nil, v)[:n] }
	be := func(v uint64, n int) []byte { return binary.BigEndian.AppendUint64(nil, v)[8-n:] }
	nan := le(0x7ff8000000000001, 8)
	tests := []struct {
		name          string
		col           testColumn
		before, after []byte // nil: NULL
		wantOld       string
	}{
		{"double NaN to NULL: both null", testColumn{tp: mysql.MYSQL_TYPE_DOUBLE, meta: 8}, nan, nil, `{}`},
		{"double NaN to another NaN: both null", testColumn{tp: mysql.MYSQL_TYPE_DOUBLE, meta: 8}, nan, le(0x7ff8000000000002, 8), `{}`},
		{"double NULL to NaN", testColumn{tp: mysql.MYSQL_TYPE_DOUBLE, meta: 8}, nil, nan, `{"c1":null}`},
		{"double -0 to 0", testColumn{tp: mysql.MYSQL_TYPE_DOUBLE, meta: 8}, le(1<<63, 8), le(0, 8), `{"c1":-0}`},
		{"int NULL to 0", testColumn{tp: mysql.MYSQL_TYPE_LONG}, nil, le(0, 4), `{"c1":null}`},
		{"int 5 to NULL", testColumn{tp: mysql.MYSQL_TYPE_LONG}, le(5, 4), nil, `{"c1":5}`},
		{"json spacing only", testColumn{tp: mysql.MYSQL_TYPE_BLOB, meta: 2, json: true}, append(le(8, 2), `{"a": 1}`...), append(le(7, 2), `{"a":1}`...), `{}`},
		// A document and SQL NULL differ, though json writes both as null: the formats that
		// tell them apart (canal-json, debezium-json, protobuf) list the change (it was {}).
		{"json empty to NULL", testColumn{tp: mysql.MYSQL_TYPE_BLOB, meta: 2, json: true}, le(0, 2), nil, `{"c1":null}`},
		{"json null document to NULL", testColumn{tp: mysql.MYSQL_TYPE_BLOB, meta: 2, json: true}, append(le(4, 2), "null"...), nil, `{"c1":null}`},
		{"NULL to json null document", testColumn{tp: mysql.MYSQL_TYPE_BLOB, meta: 2, json: true}, nil, append(le(4, 2), "null"...), `{"c1":null}`},
		{"json changed", testColumn{tp: mysql.MYSQL_TYPE_BLOB, meta: 2, json: true}, append(le(7, 2), `{"a":1}`...), append(le(7, 2), `{"a":2}`...), `{"c1":{"a":1}}`},
		// Fields as go-mysql's text (ParseTime off) writes them, compared as that text:
		// a fraction the bytes hold beyond a second is not carried into the seconds.
		{"datetime fraction past a second: other text", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2, meta: 6},
			append(be(datetimeIntOffset+datetimeBits(2026, 12, 1, 0, 0, 1), 5), be(0, 3)...),
			append(be(datetimeIntOffset+datetimeBits(2026, 12, 1, 0, 0, 0), 5), be(1_000_000, 3)...), `{"c1":"2026-12-01T00:00:01.000000"}`},
		{"datetime February 30th to March 1st", testColumn{tp: mysql.MYSQL_TYPE_DATETIME2},
			be(datetimeIntOffset+datetimeBits(2024, 2, 30, 0, 0, 0), 5),
			be(datetimeIntOffset+datetimeBits(2024, 3, 1, 0, 0, 0), 5), `{"c1":"2024-02-30T00:00:00"}`},
		{"timestamp same instant, other bytes", testColumn{tp: mysql.MYSQL_TYPE_TIMESTAMP2, meta: 2},
			append(be(1764583873, 4), 0), append(be(1764583872, 4), 100), `{}`},
		{"date February 31st to March 2nd", testColumn{tp: mysql.MYSQL_TYPE_DATE},
			le(2024<<9|2<<5|31, 3), le(2024<<9|3<<5|2, 3), `{"c1":"2024-02-31"}`},
		{"varchar changed", testColumn{tp: mysql.MYSQL_TYPE_VARCHAR, meta: 20}, append([]byte{1}, 'a'), append([]byte{1}, 'b'), `{"c1":"a"}`},
		// An invalid byte and a U+FFFD: Canal's texts are the same, its values (canal-json's) not.
		{"varchar invalid byte to U+FFFD", testColumn{tp: mysql.MYSQL_TYPE_VARCHAR, meta: 20}, []byte{1, 0xff}, append([]byte{3}, "\ufffd"...), `{"c1":"\ufffd"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEvents(t, []testColumn{{tp: mysql.MYSQL_TYPE_LONG}, tc.col})
			image := func(field []byte) []byte {
				if field == nil {
					return append([]byte{2}, le(7, 4)...)
				}
				return append(append([]byte{0}, le(7, 4)...), field...)
			}
			rows := append(image(tc.before), image(tc.after)...)
			te.expectBoth(t, replication.UPDATE_ROWS_EVENTv2, rows, `"old":`+tc.wantOld+`}`)
		})
	}
}

// TestEncodeBatchAsEncodeRow: the capture's encoding of a whole rows event (the header
// encoded once and copied, rows read in place, keys per subscription) gives, message by
// message, what EncodeRow and AppendKey give for go-mysql's values of each row, the
// last row carrying the transaction's commit and xid.
func TestEncodeBatchAsEncodeRow(t *testing.T) {
	cols := []testColumn{{tp: mysql.MYSQL_TYPE_LONG}, {tp: mysql.MYSQL_TYPE_VARCHAR, meta: 20}}
	keys := []string{PartitionPK, PartitionTable}
	targets := []Target{{By: PartitionPK}, {By: PartitionTable, Format: JSON}}
	for _, typ := range []string{TypeInsert, TypeUpdate} {
		t.Run(typ, func(t *testing.T) {
			te := newTestEvents(t, cols)
			et, images := replication.WRITE_ROWS_EVENTv2, 3
			if typ == TypeUpdate {
				et, images = replication.UPDATE_ROWS_EVENTv2, 6
			}
			var rows []byte
			for i := range images {
				rows = append(rows, 0)
				rows = binary.LittleEndian.AppendUint32(rows, uint32(i/2))
				rows = append(rows, 2, 'r', byte('a'+i))
			}
			e, err := te.rowsEvent(t, et, rows)
			if err != nil {
				t.Fatal(err)
			}
			ev := &Event{Table: te.table, Type: typ,
				Meta: Meta{Instance: "shop", TS: 1764583872, GTID: "0-1-9", File: "bin.000003", Pos: 777}}
			if ev.Rows, err = NewReader().Read(et, e, te.table, typ); err != nil || ev.Rows.raw == nil {
				t.Fatalf("read in place: %v (raw %v)", err, ev.Rows.raw != nil)
			}
			msgs, err := new(Encoder).Encode(ev, targets, true, 99, nil)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := undecodedOf(e)
			if err := newRowsDecoder().decodeRows(e, u); err != nil {
				t.Fatal(err)
			}
			step := images / 3
			if len(msgs) != 6 {
				t.Fatalf("%d messages, want 3 rows × 2 subscriptions", len(msgs))
			}
			for row := range 3 {
				m := ev.Meta
				if row == 2 {
					m.Commit, m.XID = true, 99
				}
				var before, after []any
				if typ == TypeUpdate {
					before = e.Rows[row*step]
				}
				after = e.Rows[row*step+step-1]
				want, err := EncodeRow(nil, te.table, typ, m, before, after)
				if err != nil {
					t.Fatal(err)
				}
				for s, by := range keys {
					got := msgs[row*2+s]
					if got.By != s {
						t.Errorf("row %d message %d keyed by %d, want %d", row, s, got.By, s)
					}
					if !bytes.Equal(got.Value, want) {
						t.Errorf("row %d, subscription %d:\n got %s\nwant %s", row, s, got.Value, want)
					}
					if wantKey := AppendKey(nil, te.table, by, after); !bytes.Equal(got.Key, wantKey) {
						t.Errorf("row %d key %s, want %s", row, got.Key, wantKey)
					}
				}
			}
		})
	}
}

// fuzzColumns builds a fuzzed table's columns: kind k of eventKinds for each byte, and
// flags' bits 0-2 making them unsigned, binary (every other one) and JSON.
func fuzzColumns(kinds []byte, flags uint8) []testColumn {
	cols := make([]testColumn, len(kinds))
	for i, k := range kinds {
		cols[i] = eventKinds[int(k)%len(eventKinds)]
		cols[i].unsigned = flags&1 != 0
		cols[i].binary = flags&2 != 0 && i%2 == 0
		cols[i].json = flags&4 != 0
	}
	return cols
}

// TestInvalidDatesSeed: the fuzzers' seed of invalid dates reads as the dates it means,
// alike both ways.
func TestInvalidDatesSeed(t *testing.T) {
	kinds, src := invalidDatesSeed()
	cols := fuzzColumns(kinds, 0)
	te := newTestEvents(t, cols)
	inPlace, decoded, errIn, errDec := te.encodeBoth(t, replication.UPDATE_ROWS_EVENTv2, rowBytes(cols, te.table, 4, src))
	if errIn != nil || errDec != nil || !bytes.Equal(inPlace, decoded) {
		t.Fatalf("in place (%v):\n%s\ngo-mysql (%v):\n%s", errIn, inPlace, errDec, decoded)
	}
	for _, want := range []string{`"c1":"2024-02-30T10:00:00.500000"`, `"c2":"2023-02-29"`, `"old":{"c0":2,"c1":"2024-04-31T10:00:00.500000","c2":"2024-04-31"}`,
		`"c1":"2100-02-29T10:00:00.500000"`, `"c3":"2023-11-14T22:13:20.50Z"`} {
		if !bytes.Contains(inPlace, []byte(want)) {
			t.Errorf("messages lack %s:\n%s", want, inPlace)
		}
	}
}
