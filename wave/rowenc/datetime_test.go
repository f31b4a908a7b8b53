package rowenc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// datetime2Bytes packs a DATETIME2(dec) as MySQL writes it: the integer part (date and
// clock bit fields) plus its offset in five bytes, then the fraction in (dec+1)/2 bytes,
// each big-endian; the fraction is given as stored (so it may be out of range).
func datetime2Bytes(year, month, day, hour, minute, second int, stored uint64, dec int) []byte {
	ymd := uint64(year*13+month)<<5 | uint64(day)
	v := (ymd<<17|uint64(hour)<<12|uint64(minute)<<6|uint64(second))<<0 + datetimeIntOffset
	b := []byte{byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	for i := (dec+1)/2 - 1; i >= 0; i-- {
		b = append(b, byte(stored>>(8*i)))
	}
	return b
}

// goMySQLDatetime is go-mysql's text of a DATETIME2 with ParseTime off (decodeDatetime2's
// formatDatetime, formatZeroTime for the zero value), written here with fmt as go-mysql
// writes it.
func goMySQLDatetime(b []byte, dec int) string {
	intPart, year, month, day, hour, minute, second, frac := datetime2Parts(b, uint8(dec))
	if intPart == 0 {
		year, month, day = 0, 0, 0
	}
	if dec == 0 {
		return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", year, month, day, hour, minute, second)
	}
	s := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d", year, month, day, hour, minute, second, frac)
	return s[:len(s)-(6-dec)]
}

// TestDatetime2TextAsGoMySQL: the DATETIME2 text written straight from the packed parts
// is go-mysql's text of the field, byte for byte, for random values in and out of range
// (a day past its month's end, an hour 31, a fraction the bytes hold beyond a second,
// five year digits, before 1970); for the valid ones it is also what time.Time formats.
func TestDatetime2TextAsGoMySQL(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	valid := 0
	for range 200_000 {
		dec := r.IntN(7)
		year := 1960 + r.IntN(8200) // some before 1970, some with five digits
		month, day := r.IntN(13), r.IntN(32)
		hour, minute, second := r.IntN(32), r.IntN(64), r.IntN(64)
		if r.IntN(2) == 0 { // half of them valid
			month, day, hour, minute, second = 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60)
		}
		stored := r.Uint64N(1 << (8 * ((dec + 1) / 2)))
		b := datetime2Bytes(year, month, day, hour, minute, second, stored, dec)
		got, want := string(appendDatetime2(nil, b, uint8(dec), ' ')), goMySQLDatetime(b, dec)
		if got != want {
			t.Fatalf("%x dec %d: %q, go-mysql %q", b, dec, got, want)
		}
		if tGot := string(appendDatetime2(nil, b, uint8(dec), 'T')); tGot != strings.Replace(want, " ", "T", 1) {
			t.Fatalf("%x dec %d: %q with a T, go-mysql %q", b, dec, tGot, want)
		}
		frac := fracMicros(b[5:], uint8(dec))
		if year <= 9999 && month >= 1 && day >= 1 && day <= time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day() &&
			hour < 24 && minute < 60 && second < 60 && frac < 1_000_000 {
			valid++
			layout := "2006-01-02 15:04:05.000000"[:19+min(dec, 1)+dec]
			if tm := time.Date(year, time.Month(month), day, hour, minute, second, int(frac)*1000, time.UTC).Format(layout); got != tm {
				t.Fatalf("%x dec %d: %q, time.Time %q", b, dec, got, tm)
			}
		}
	}
	if valid < 40_000 {
		t.Fatalf("only %d of 200,000 values valid", valid)
	}
}

// TestDatetime2InvalidDates: the dates MySQL and MariaDB store under ALLOW_INVALID_DATES
// (a day up to 31 in any month) and with a zero month or day are written as stored, not
// moved to a real date as time.Date would move them (TestInvalidDatesEveryFormat
// follows them through every format, both ways).
func TestDatetime2InvalidDates(t *testing.T) {
	tests := []struct {
		name                             string
		year, month, day, hour, min, sec int
		stored                           uint64
		dec                              int
		want                             string
	}{
		{"February 30th, leap year", 2024, 2, 30, 10, 0, 0, 50, 1, "2024-02-30T10:00:00.5"},
		{"February 29th, not a leap year", 2023, 2, 29, 0, 0, 0, 0, 0, "2023-02-29T00:00:00"},
		{"February 31st", 2024, 2, 31, 23, 59, 59, 999999, 6, "2024-02-31T23:59:59.999999"},
		{"April 31st", 2025, 4, 31, 12, 30, 0, 1230, 3, "2025-04-31T12:30:00.123"},
		{"February 29th 2100", 2100, 2, 29, 0, 0, 1, 0, 0, "2100-02-29T00:00:01"},
		{"zero day", 2024, 5, 0, 1, 2, 3, 0, 0, "2024-05-00T01:02:03"},
		{"zero month", 2024, 0, 15, 1, 2, 3, 0, 0, "2024-00-15T01:02:03"},
		{"valid", 2024, 2, 29, 10, 0, 0, 5, 2, "2024-02-29T10:00:00.05"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := datetime2Bytes(tc.year, tc.month, tc.day, tc.hour, tc.min, tc.sec, tc.stored, tc.dec)
			c := &Column{Name: "d", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: uint8(tc.dec)}
			c.raw = newRawCol(mysql.MYSQL_TYPE_DATETIME2, uint16(tc.dec))
			got, err := appendRaw(nil, c, b)
			if err != nil || string(got) != `"`+tc.want+`"` {
				t.Errorf("json %s (%v), want %q", got, err, tc.want)
			}
			text, err := appendRawText(nil, &c.raw, b)
			if sql := tc.want[:10] + " " + tc.want[11:]; err != nil || string(text) != sql {
				t.Errorf("text %q (%v), want %q", text, err, sql)
			}
		})
	}
}

// BenchmarkDatetimeText is a DATETIME(6)'s text from its packed bytes, straight from
// the parts (appendDatetime2), and through a time.Time as go-mysql makes one with
// ParseTime on and appendTimeParts then takes it apart (the old way, which moved
// 2024-02-30 to March 1st).
func BenchmarkDatetimeText(b *testing.B) {
	v := datetime2Bytes(2026, 12, 1, 10, 11, 12, 123456, 6)
	c := &Column{Name: "d", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 6}
	var dst []byte
	b.Run("straight", func(b *testing.B) {
		for b.Loop() {
			dst = appendDatetime2(dst[:0], v, 6, 'T')
		}
	})
	b.Run("time.Time", func(b *testing.B) {
		for b.Loop() {
			_, year, month, day, hour, minute, second, frac := datetime2Parts(v, 6)
			t := time.Date(year, time.Month(month), day, hour, minute, second, int(frac*1000), time.UTC)
			dst = appendTimeParts(dst[:0], c, t, 'T', false)
		}
	})
}

// TestInvalidDatesEveryFormat follows a row of dates MySQL and MariaDB store under
// ALLOW_INVALID_DATES (DATETIME(1) 2024-02-30 10:00:00.5, DATETIME 2023-02-29, DATE
// 2024-02-31) through every format, read in place and decoded by go-mysql (as the
// capture's rowsDecoder has it): both ways give the same messages, byte for byte,
// and each carries the dates as stored, except debezium-json's epoch numbers, which
// cannot hold them and carry Debezium's value for a date it cannot read (0: 1970-01-01).
func TestInvalidDatesEveryFormat(t *testing.T) {
	be := func(v uint64, n int) []byte { return binary.BigEndian.AppendUint64(nil, v)[8-n:] }
	cols := []testColumn{{tp: mysql.MYSQL_TYPE_LONG}, {tp: mysql.MYSQL_TYPE_DATETIME2, meta: 1},
		{tp: mysql.MYSQL_TYPE_DATETIME2}, {tp: mysql.MYSQL_TYPE_DATE}, {tp: mysql.MYSQL_TYPE_TIMESTAMP2, meta: 3}}
	row := []byte{0}
	row = binary.LittleEndian.AppendUint32(row, 7)
	row = append(row, append(be(datetimeIntOffset+datetimeBits(2024, 2, 30, 10, 0, 0), 5), 50)...)
	row = append(row, be(datetimeIntOffset+datetimeBits(2023, 2, 29, 0, 0, 0), 5)...)
	row = append(row, binary.LittleEndian.AppendUint32(nil, 2024<<9|2<<5|31)[:3]...)
	row = append(row, append(be(1700000000, 4), be(5000, 2)...)...) // 2023-11-14 22:13:20.500 UTC
	want := map[string][]string{
		FormatJSON: {`"c1":"2024-02-30T10:00:00.5"`, `"c2":"2023-02-29T00:00:00"`, `"c3":"2024-02-31"`, `"c4":"2023-11-14T22:13:20.500Z"`},
		FormatCanalJSON: {`"c1":"2024-02-30 10:00:00.5"`, `"c2":"2023-02-29 00:00:00"`, `"c3":"2024-02-31"`,
			`"c4":"2023-11-14 22:13:20.500"`},
		FormatMaxwellJSON: {`"c1":"2024-02-30 10:00:00.5"`, `"c2":"2023-02-29 00:00:00"`, `"c3":"2024-02-31"`,
			`"c4":"2023-11-14 22:13:20.500"`},
		FormatDebeziumJSON: {`"c1":"2024-02-30 10:00:00.5"`, `"c2":"2023-02-29 00:00:00"`, `"c3":"2024-02-31"`,
			`"c4":"2023-11-14 22:13:20.500"`},
		FormatDebeziumJSON + ",temporal=epoch": {`"c1":0,`, `"c2":0,`, `"c3":0,`, `"c4":"2023-11-14T22:13:20.500Z"`},
		FormatProtobuf:                         {"2024-02-30T10:00:00.5", "2023-02-29T00:00:00", "2024-02-31", "2023-11-14T22:13:20.500Z"},
		FormatCanalProtobuf:                    {"2024-02-30 10:00:00.5", "2023-02-29 00:00:00", "2024-02-31", "2023-11-14 22:13:20.500"},
	}
	defer func(f func() time.Time) { wallNow = f }(wallNow)
	wallNow = func() time.Time { return time.UnixMilli(1764583873123) }
	for _, name := range FormatNames() {
		if _, ok := want[name]; !ok {
			t.Errorf("format %s: no expectation", name)
		}
	}
	for spec, wants := range want {
		t.Run(spec, func(t *testing.T) {
			name, opt, _ := strings.Cut(spec, ",")
			opts := map[string]string{}
			if k, v, ok := strings.Cut(opt, "="); ok {
				opts[k] = v
			}
			f, err := NewFormat(name, opts)
			if err != nil {
				t.Fatal(err)
			}
			targets := []Target{{By: PartitionPK, Format: f}}
			if _, ok := f.(GroupFormat); ok {
				targets = append(targets, Target{By: PartitionPK, Format: f, Partition: kafkaPartition(3)})
			}
			m := Meta{Instance: "i", TS: 1764583872, File: "f", Pos: 4}
			te := newTestEvents(t, cols)
			encode := func(rows Rows) []byte {
				var out []byte
				var enc Encoder
				msgs, err := enc.Encode(&Event{Table: te.table, Type: TypeInsert, Meta: m, Rows: rows}, targets, true, 9, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, msg := range msgs {
					out = fmt.Appendf(append(out, msg.Key...), "\t%s\n", msg.Value)
				}
				return out
			}
			e, err := te.rowsEvent(t, replication.WRITE_ROWS_EVENTv2, row)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := NewReader().Read(replication.WRITE_ROWS_EVENTv2, e, te.table, TypeInsert)
			if err != nil || rows.raw == nil {
				t.Fatalf("not read in place: %v", err)
			}
			inPlace := encode(rows)
			u, _ := undecodedOf(e)
			if err := newRowsDecoder().decodeRows(e, u); err != nil {
				t.Fatal(err)
			}
			if _, ok := e.Rows[0][1].(int64); !ok {
				t.Fatalf("go-mysql decoded the DATETIME as %T: not as rowsDecoder has it (its bytes)", e.Rows[0][1])
			}
			if _, ok := e.Rows[0][4].(time.Time); !ok {
				t.Fatalf("go-mysql decoded the TIMESTAMP as %T: not as the syncer does (ParseTime on)", e.Rows[0][4])
			}
			decoded := encode(Rows{rows: []values{e.Rows[0]}})
			if !bytes.Equal(inPlace, decoded) {
				t.Fatalf("in place:\n%q\ngo-mysql:\n%q", inPlace, decoded)
			}
			for _, w := range wants {
				if !bytes.Contains(inPlace, []byte(w)) {
					t.Errorf("messages lack %s:\n%q", w, inPlace)
				}
			}
			for _, moved := range []string{"2024-03-01T10:00:00.5", "2024-03-01 10:00:00.5\"", "2023-03-01", "2024-03-02"} {
				if bytes.Contains(inPlace, []byte(moved)) {
					t.Errorf("messages carry %s, a date moved:\n%q", moved, inPlace)
				}
			}
		})
	}
}

// TestOldDatetimeDecoded: a pre-5.6 DATETIME (8 bytes, its digits packed as a decimal
// number), which only go-mysql decodes, is written as stored through rowsDecoder, a day
// past its month's end, a zero day and the zero value included; go-mysql's own decoding
// (ParseTime on) made a time.Time of the first with time.Date.
func TestOldDatetimeDecoded(t *testing.T) {
	te := newTestEvents(t, []testColumn{{tp: mysql.MYSQL_TYPE_LONG}, {tp: mysql.MYSQL_TYPE_DATETIME}})
	var rows []byte
	for i, v := range []uint64{20240230100000, 20240500010203, 0, 20261201101112} {
		rows = append(rows, 0)
		rows = binary.LittleEndian.AppendUint32(rows, uint32(i))
		rows = binary.LittleEndian.AppendUint64(rows, v)
	}
	e, err := te.rowsEvent(t, replication.WRITE_ROWS_EVENTv2, rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewReader().Read(replication.WRITE_ROWS_EVENTv2, e, te.table, TypeInsert)
	if err != nil || got.raw != nil || len(got.rows) != 4 {
		t.Fatalf("read %d rows in place, %d decoded: %v", len(got.raw), len(got.rows), err)
	}
	for i, want := range []string{`"2024-02-30T10:00:00"`, `"2024-05-00T01:02:03"`, `"0000-00-00T00:00:00"`, `"2026-12-01T10:11:12"`} {
		msg, err := EncodeRow(nil, te.table, TypeInsert, Meta{}, nil, got.rows[i])
		if err != nil || !bytes.Contains(msg, []byte(`"c1":`+want)) {
			t.Errorf("row %d: %s (%v), want c1 %s", i, msg, err, want)
		}
	}
}
