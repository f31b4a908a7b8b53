package rowenc

import (
	"bytes"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/rowenc/canalpb"
)

// TestAppendJavaFloat: Canal's FLOAT and DOUBLE strings are Java's Float.toString and
// Double.toString (the expected values are what Java 17 prints).
func TestAppendJavaFloat(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		bits int
		want string
	}{
		{"0", 64, "0.0"}, {"-0", 64, "-0.0"}, {"1", 64, "1.0"}, {"100", 64, "100.0"}, {"1.25", 64, "1.25"},
		{"0.001", 64, "0.001"}, {"0.0001", 64, "1.0E-4"}, {"9999999", 64, "9999999.0"}, {"1e+07", 64, "1.0E7"},
		{"12345678.5", 64, "1.23456785E7"}, {"-2.5e-300", 64, "-2.5E-300"}, {"1.1", 32, "1.1"}, {"3.4028235e+38", 32, "3.4028235E38"},
		{"1.7976931348623157e+308", 64, "1.7976931348623157E308"},
		// The smallest values: the two-digit decimal nearest them, not the shortest
		// padded (5.0E-324 and 1.0E-45 read back the same but compared otherwise).
		{"5e-324", 64, "4.9E-324"}, {"-5e-324", 64, "-4.9E-324"}, {"1e-45", 32, "1.4E-45"}, {"2e-3", 64, "0.002"},
		{"4e-5", 64, "4.0E-5"}, {"1e+22", 64, "1.0E22"}, {"3e-310", 64, "3.0E-310"}, {"3e-44", 32, "2.9E-44"}, // java F.java, Java 17
	} {
		if got := appendJavaFloat(nil, []byte(tc.tok), tc.bits); string(got) != tc.want {
			t.Errorf("%s (%d bits) = %s, want %s", tc.tok, tc.bits, got, tc.want)
		}
	}
}

// TestCanalDDLType: the types Canal 1.1.7 gives (TestCanalDDLTypeMatchesCanalIntegration
// checks these and more against its parser).
func TestCanalDDLType(t *testing.T) {
	for sql, want := range map[string]string{
		"ALTER TABLE t ADD c INT":                                                            "ALTER",
		"ALTER TABLE `db`.`t` MODIFY COLUMN a BIGINT":                                        "ALTER",
		"ALTER TABLE t ADD COLUMN `index` INT":                                               "ALTER",
		"ALTER TABLE t ADD INDEX i (a)":                                                      "CINDEX",
		"alter /* gh-ost */ table `db`.`_t_gho` add key k (a)":                               "CINDEX",
		"ALTER TABLE t ADD UNIQUE KEY u (a)":                                                 "CINDEX",
		"ALTER TABLE t ADD PRIMARY KEY (id)":                                                 "CINDEX",
		"ALTER TABLE t ADD CONSTRAINT u UNIQUE (a)":                                          "CINDEX",
		"ALTER TABLE t ADD FULLTEXT ft (a)":                                                  "CINDEX",
		"ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES p(id)":                   "QUERY",
		"ALTER TABLE t ADD CHECK (a > 0), ADD INDEX i (a)":                                   "CINDEX",
		"ALTER TABLE t ADD FOREIGN KEY (p) REFERENCES p(id), ADD c INT":                      "ALTER",
		"ALTER TABLE t DROP INDEX i":                                                         "DINDEX",
		"ALTER TABLE t DROP KEY i, ADD KEY i (a, b)":                                         "DINDEX",
		"ALTER TABLE t DROP CONSTRAINT fk":                                                   "DINDEX",
		"ALTER TABLE t DROP PRIMARY KEY":                                                     "ALTER",
		"ALTER TABLE t DROP FOREIGN KEY fk":                                                  "ALTER",
		"ALTER TABLE t RENAME TO u":                                                          "RENAME",
		"ALTER TABLE t RENAME COLUMN a TO b":                                                 "ALTER",
		"ALTER TABLE t ADD c INT, ADD INDEX i (c)":                                           "ALTER",
		"ALTER TABLE t ADD INDEX i (a), ALGORITHM=INPLACE, LOCK=NONE":                        "CINDEX",
		"ALTER TABLE t ADD INDEX i (a), ENGINE=InnoDB":                                       "ALTER",
		"ALTER TABLE t ADD COLUMN c ENUM('a,b'), ADD INDEX i (c)":                            "ALTER",
		"ALTER TABLE t DEFAULT CHARSET=utf8mb4":                                              "QUERY",
		"ALTER TABLE t DEFAULT CHARACTER SET utf8mb4":                                        "ALTER",
		"ALTER TABLE t ADD COLUMN IF NOT EXISTS c INT":                                       "QUERY",
		"ALTER TABLE t PARTITION BY HASH(id) PARTITIONS 4":                                   "QUERY",
		"ALTER DATABASE d CHARACTER SET utf8mb4":                                             "QUERY",
		"/* x */ create table t (a int)":                                                     "CREATE",
		"CREATE TABLE t2 LIKE t":                                                             "CREATE",
		"CREATE OR REPLACE TABLE t (a int)":                                                  "QUERY",
		"CREATE UNIQUE INDEX i ON t (a)":                                                     "CINDEX",
		"CREATE INDEX IF NOT EXISTS i ON t (a)":                                              "QUERY",
		"CREATE DATABASE d":                                                                  "QUERY",
		"CREATE VIEW v AS SELECT 1":                                                          "QUERY",
		"CREATE DEFINER=`root`@`%` TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1": "QUERY",
		"drop table t": "ERASE",
		"DROP TABLE IF EXISTS `a`, `b` /* generated by server */": "ERASE",
		"DROP INDEX i ON t":                             "DINDEX",
		"DROP DATABASE d":                               "QUERY",
		"DROP VIEW v":                                   "QUERY",
		"truncate table t":                              "TRUNCATE",
		"-- c\nRENAME TABLE a TO b, c TO d":             "RENAME",
		"RENAME USER a TO b":                            "QUERY",
		"# c\n  Create Or Replace Table t()":            "QUERY",
		"OPTIMIZE TABLE t":                              "QUERY",
		"GRANT ALL ON *.* TO x":                         "QUERY",
		"/* unterminated":                               "QUERY",
		"ALTER TABLE t ADD c INT COMMENT 'unterminated": "QUERY",
		"DROP TABLE t -- c":                             "ERASE",
		"":                                              "QUERY",
	} {
		if got := CanalDDLType(sql); got != want {
			t.Errorf("%q: %s, want %s", sql, got, want)
		}
	}
}

// TestCanalDDLEvent: canal-protobuf's EventType is the one of canal-json's name for every
// statement.
func TestCanalDDLEvent(t *testing.T) {
	for _, sql := range canalDDLStatements {
		name := CanalDDLType(sql)
		want, ok := canalpb.EventType_value[name]
		if !ok || canalDDLEvent(sql) != uint64(want) {
			t.Errorf("%q: %s is EventType %d, want %d (known: %v)", sql, name, canalDDLEvent(sql), want, ok)
		}
	}
}

// FuzzCanalDDLType: no statement panics, and every one gets an EventType canal-protobuf
// has, the same in both formats.
func FuzzCanalDDLType(f *testing.F) {
	for _, sql := range canalDDLStatements {
		f.Add(sql)
	}
	f.Add("ALTER TABLE `t")
	f.Add("ALTER TABLE t ADD CONSTRAINT")
	f.Add("ALTER TABLE t ADD INDEX i ((a), ADD c INT)),, ENGINE=x")
	f.Fuzz(func(t *testing.T, sql string) {
		name := CanalDDLType(sql)
		if want, ok := canalpb.EventType_value[name]; !ok || canalDDLEvent(sql) != uint64(want) {
			t.Errorf("%q: type %q, EventType %d", sql, name, canalDDLEvent(sql))
		}
	})
}

// TestTwosComplement: Kafka Connect's Decimal bytes are Java's BigInteger.toByteArray.
func TestTwosComplement(t *testing.T) {
	for v, want := range map[int64][]byte{0: {0}, 127: {0x7f}, 128: {0, 0x80}, 255: {0, 0xff}, 256: {1, 0},
		-1: {0xff}, -128: {0x80}, -129: {0xff, 0x7f}, -256: {0xff, 0}, -32768: {0x80, 0}} {
		if got := twosComplement(big.NewInt(v)); !bytes.Equal(got, want) {
			t.Errorf("%d: % x, want % x", v, got, want)
		}
	}
}

func TestDebeziumEpochValues(t *testing.T) {
	for _, tc := range []struct {
		f    func(dst, tok []byte) []byte
		tok  string
		want string
	}{
		{appendEpochDays, `"1970-01-01"`, "0"}, {appendEpochDays, `"1969-12-31"`, "-1"}, {appendEpochDays, `"2024-02-29"`, "19782"},
		{appendTimeMicros, `"00:00:01.5"`, "1500000"}, {appendTimeMicros, `"-838:59:59"`, "-3020399000000"}, {appendTimeMicros, `"12:34:56.000001"`, "45296000001"},
		{appendEpochMillis, `"1970-01-01T00:00:01.123"`, "1123"}, {appendEpochMicros, `"1969-12-31T23:59:59.999999"`, "-1"},
		// Dates java.time cannot hold, as Debezium's binlog reader takes them: a day past
		// its month's end (ALLOW_INVALID_DATES) the epoch (its warn and skip modes), a
		// zero year, month or day null. Not moved into the next month.
		{appendEpochDays, `"2024-02-31"`, "0"}, {appendEpochDays, `"2023-02-29"`, "0"}, {appendEpochDays, `"2024-04-31"`, "0"},
		{appendEpochMillis, `"2024-02-30T10:00:00.5"`, "0"}, {appendEpochMicros, `"2025-11-31T23:59:59.999999"`, "0"},
		{appendEpochDays, `"2024-00-15"`, "null"}, {appendEpochDays, `"2024-05-00"`, "null"}, {appendEpochDays, `"0000-01-01"`, "null"},
		{appendEpochMillis, `"2024-05-00T01:02:03"`, "null"}, {appendEpochMicros, `"2024-00-01T00:00:00.000001"`, "null"},
		{appendEpochMillis, `"2024-02-29T10:00:00"`, "1709200800000"}, {appendEpochDays, `"2100-02-28"`, "47540"},
	} {
		if got := tc.f(nil, []byte(tc.tok)); string(got) != tc.want {
			t.Errorf("%s: %s, want %s", tc.tok, got, tc.want)
		}
	}
}

// TestEnumSetValues: Canal's ENUM index and SET bits come back from the json rendering,
// escaped names included.
func TestEnumSetValues(t *testing.T) {
	c := &Column{Type: mysql.MYSQL_TYPE_ENUM, Enum: []string{"a", `q"x`}, Set: []string{"a", `q"x`, "z"}}
	if n, ok := enumIndex(c, []byte(`"q\"x"`)); !ok || n != 2 {
		t.Errorf("enum: %d %v", n, ok)
	}
	if n, ok := enumIndex(c, []byte(`""`)); !ok || n != 0 {
		t.Errorf("enum '': %d %v", n, ok)
	}
	if n, ok := setBits(c, []byte(`"q\"x,z"`)); !ok || n != 6 {
		t.Errorf("set: %d %v", n, ok)
	}
	if got := appendSetArray(nil, []byte(`"q\"x,z"`)); !json.Valid(got) || string(got) != `["q\"x","z"]` {
		t.Errorf("set array: %s", got)
	}
	if got := appendJSONText(nil, []byte(`"s"`)); string(got) != `"\"s\""` {
		t.Errorf("a JSON document that is a string: %s", got)
	}
	if got := appendLatin1(nil, []byte{0, 'a', '"', 0xe9, 0xff}); string(got) != `"\u0000a\"éÿ"` {
		t.Errorf("latin1: %s", got)
	}
}

// FuzzFormats: any rows event of the kinds read in place, in every format (and
// debezium-json's numeric options), encodes to valid JSON (a protobuf format to a
// message its types decode) or to an error, never a panic.
func FuzzFormats(f *testing.F) {
	f.Add([]byte{0, 4, 9, 11, 14, 17, 19}, []byte("\x01\x02\x03 some bytes \xff\x80\x00 of a row"), uint8(0), uint8(0))
	f.Add([]byte{8, 10, 12, 13, 15, 16, 18, 20}, bytes.Repeat([]byte{0x80, 0x7f, 3}, 40), uint8(1), uint8(7))
	f.Add([]byte{1, 2, 3, 5, 6, 7}, bytes.Repeat([]byte{0xff, 0}, 30), uint8(2), uint8(3))
	var targets []Target
	for _, name := range FormatNames() {
		fm, err := NewFormat(name, nil)
		if err != nil {
			f.Fatal(err)
		}
		targets = append(targets, Target{By: PartitionPK, Format: fm})
	}
	numeric, err := NewFormat(FormatDebeziumJSON, map[string]string{"schema": "true", "decimal": "precise", "temporal": "epoch", "tombstones": "true"})
	if err != nil {
		f.Fatal(err)
	}
	targets = append(targets, Target{By: PartitionPK, Format: numeric})
	f.Fuzz(func(t *testing.T, kinds, src []byte, op, flags uint8) {
		if len(kinds) == 0 || len(kinds) > 24 {
			return
		}
		cols := fuzzColumns(kinds, flags)
		te := newTestEvents(t, cols)
		if !te.table.inPlace {
			return
		}
		ets := []replication.EventType{replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2}
		typs := []string{TypeInsert, TypeUpdate, TypeDelete}
		images := 2
		if op%3 == 1 {
			images = 4
		}
		e, err := te.rowsEvent(t, ets[op%3], rowBytes(cols, te.table, images, src))
		if err != nil {
			return
		}
		ev := &Event{Table: te.table, Type: typs[op%3], Meta: Meta{Instance: "i", File: "f"}}
		if ev.Rows, err = NewReader().Read(ets[op%3], e, te.table, ev.Type); err != nil {
			return
		}
		msgs, err := new(Encoder).Encode(ev, targets, true, 1, nil)
		if err != nil {
			return
		}
		for _, m := range msgs {
			if isProtobufFormat(targets[m.By].Format) {
				checkProtobufMessage(t, targets[m.By].Format, m.Value) // format_protobuf_test.go
				continue
			}
			if m.Value != nil && !json.Valid(m.Value) {
				t.Fatalf("format %s: invalid JSON %s", targets[m.By].Format.Name(), m.Value)
			}
		}
	})
}

// TestJSONStringDocument: a JSON column whose document is a JSON string ("s") is sent as
// the document's text, quotes included, where a format carries JSON as a string.
func TestJSONStringDocument(t *testing.T) {
	tb := &Table{Database: "d", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true}, {Name: "doc", Type: mysql.MYSQL_TYPE_JSON}}}
	rows := Rows{rows: []values{{int32(1), `"s"`}}}
	r := &Row{Table: tb, Type: TypeInsert, Before: NoImage, After: Image{rows: &rows, t: tb, i: 0}}
	for name, want := range map[string]string{FormatCanalJSON: `"doc":"\"s\""`, FormatDebeziumJSON: `"doc":"\"s\""`, FormatMaxwellJSON: `"doc":"s"`} {
		f, err := NewFormat(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := f.AppendRow(nil, r)
		if err != nil || !bytes.Contains(msg, []byte(want)) {
			t.Errorf("%s: %s (%v), want it to hold %s", name, msg, err, want)
		}
	}
}

// TestJSONNullDocument: a JSON column holding the document null (not SQL NULL: `js IS
// NULL` is 0) is sent as that document where a format tells the two apart: Canal's value
// "null" with isNull false, Debezium's io.debezium.data.Json "null"; SQL NULL stays null.
func TestJSONNullDocument(t *testing.T) {
	tb := &Table{Database: "d", Name: "t", PK: []int{0}, Columns: []Column{
		{Name: "id", Type: mysql.MYSQL_TYPE_LONG, PK: true}, {Name: "doc", Type: mysql.MYSQL_TYPE_JSON},
		{Name: "none", Type: mysql.MYSQL_TYPE_JSON}}}
	tb.Prepare()
	rows := Rows{rows: []values{{int32(1), `null`, nil}}}
	r := &Row{Table: tb, Type: TypeInsert, Before: NoImage, After: Image{rows: &rows, t: tb, i: 0}}
	for name, want := range map[string]string{FormatCanalJSON: `"doc":"null","none":null`, FormatDebeziumJSON: `"doc":"null","none":null`} {
		f, err := NewFormat(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := f.AppendRow(nil, r)
		if err != nil || !bytes.Contains(msg, []byte(want)) {
			t.Errorf("%s: %s (%v), want it to hold %s", name, msg, err, want)
		}
	}
	f, err := NewFormat(FormatCanalProtobuf, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := f.AppendRow(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	_, rc := decodeCanal(t, msg)
	cols := rc.RowDatas[0].AfterColumns
	if doc, none := cols[1], cols[2]; doc.GetIsNull() || doc.GetValue() != "null" || !none.GetIsNull() {
		t.Errorf("canal-protobuf: doc isNull %v value %q, none isNull %v; want false \"null\", true", doc.GetIsNull(), doc.GetValue(), none.GetIsNull())
	}
}

// TestCanalMySQLTypeOfBlobs: canal's mysqlType names a BLOB or TEXT column by its size, as
// Canal does (a LONGTEXT said text, a MEDIUMBLOB blob: an outside trial); MariaDB's JSON
// stays longtext, and a size not known stays the plain type. A DECIMAL's precision and
// scale and a BIT's width are Canal's COLUMN_TYPE's where known ("decimal(10,2)", not
// "decimal").
func TestCanalMySQLTypeOfBlobs(t *testing.T) {
	for _, tc := range []struct {
		c    Column
		want string
	}{
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 1}, `"tinytext"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 2}, `"text"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 3}, `"mediumtext"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 4}, `"longtext"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 1, Binary: true}, `"tinyblob"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 3, Binary: true}, `"mediumblob"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 4, Binary: true}, `"longblob"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, Binary: true}, `"blob"`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, BlobBytes: 4, JSON: true}, `"longtext"`},
		{Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL, Precision: 10, Scale: 2}, `"decimal(10,2)"`},
		{Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL, Precision: 65}, `"decimal(65,0)"`},
		{Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL}, `"decimal"`},
		{Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL, Precision: 5, Unsigned: true}, `"decimal(5,0) unsigned"`},
		{Column{Type: mysql.MYSQL_TYPE_DOUBLE, Unsigned: true}, `"double unsigned"`},
		{Column{Type: mysql.MYSQL_TYPE_BIT, Bits: 1}, `"bit(1)"`},
		{Column{Type: mysql.MYSQL_TYPE_BIT, Bits: 64}, `"bit(64)"`},
		{Column{Type: mysql.MYSQL_TYPE_BIT}, `"bit"`},
	} {
		if got := string(appendCanalMySQLType(nil, &tc.c)); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.c, got, tc.want)
		}
	}
	for n, want := range map[uint64]uint8{255: 1, 256: 2, 65535: 2, 65536: 3, 16777215: 3, 16777216: 4, 4294967295: 4} {
		if got := BlobBytesOfLength(n); got != want {
			t.Errorf("BlobBytesOfLength(%d) = %d, want %d", n, got, want)
		}
	}
}
