package rowenc

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"math/big"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/jsonenc"
)

// FormatDebeziumJSON is the change event of Debezium's MySQL connector as Kafka Connect's
// JsonConverter writes it: the envelope {before, after, source, op, ts_ms, ts_us, ts_ns,
// transaction} (Debezium 2.6's and 3's times in µs and ns beside ms),
// op c, u, d, and r for a snapshot row; with schemas.enable (option schema: true) wrapped
// as {schema, payload}. Its default rendering is the one Flink's debezium-json reads with
// its default options; the options give Debezium's own numeric renderings:
//
//	schema:     false | true     the "schema" part (JsonConverter's schemas.enable)
//	tombstones: false | true     a null-valued message after each delete (tombstones.on.delete)
//	decimal:    string | precise | double   decimal.handling.mode
//	temporal:   string | epoch   string: DATE "yyyy-MM-dd", DATETIME and TIMESTAMP
//	                             "yyyy-MM-dd HH:mm:ss[.ffffff]" (UTC), TIME "HH:mm:ss[.ffffff]";
//	                             epoch: Debezium's time.precision.mode=adaptive_time_microseconds
//	                             (DATE days, TIME µs, DATETIME ms or µs by its digits,
//	                             TIMESTAMP an ISO-8601 string in UTC; a date java.time
//	                             cannot hold as Debezium reads it: debeziumUnreadable)
//	bigint_unsigned: long | precise   bigint.unsigned.handling.mode: long, an int64 in
//	                             the schema (the JSON number exact; JsonConverter wraps
//	                             one above 2⁶³−1, as it does Debezium's); precise,
//	                             Kafka Connect's Decimal (scale 0), read exact
//	key:        debezium | binlake   debezium: a row's Kafka key, under partition_by pk,
//	                             is Debezium's: its primary key's columns as a struct
//	                             ({"id":7}; with schema: true, {schema, payload}), which
//	                             Kafka Connect's JsonConverter reads; binlake: the key
//	                             every format shares (db.table:[7])
//
// DDL goes nowhere: Debezium writes schema changes to a topic of their own, never into a
// table's topic.
const FormatDebeziumJSON = "debezium-json"

type debeziumJSON struct {
	schema, tombstones bool
	decimal            string
	epoch              bool
	binlakeKey         bool // option key: binlake
	unsignedPrecise    bool // option bigint_unsigned: precise
}

func init() {
	RegisterFormat(FormatDebeziumJSON, func(opts map[string]string) (Format, error) {
		o, err := ParseFormatOptions(FormatDebeziumJSON, opts, []FormatOption{
			{Name: "schema", Values: []string{"false", "true"}},
			{Name: "tombstones", Values: []string{"false", "true"}},
			{Name: "decimal", Values: []string{"string", "precise", "double"}},
			{Name: "temporal", Values: []string{"string", "epoch"}},
			{Name: "key", Values: []string{"debezium", "binlake"}},
			{Name: "bigint_unsigned", Values: []string{"long", "precise"}},
		})
		if err != nil {
			return nil, err
		}
		return debeziumJSON{schema: o["schema"] == "true", tombstones: o["tombstones"] == "true",
			decimal: o["decimal"], epoch: o["temporal"] == "epoch", binlakeKey: o["key"] == "binlake",
			unsignedPrecise: o["bigint_unsigned"] == "precise"}, nil
	})
}

func (debeziumJSON) Name() string       { return FormatDebeziumJSON }
func (f debeziumJSON) Tombstones() bool { return f.tombstones }

// SplitsKeyChange: Debezium sends an update of a row's primary key as a delete under the
// old key (and its tombstone) and a create under the new one.
func (debeziumJSON) SplitsKeyChange() bool { return true }

func (debeziumJSON) AppendDDL(dst []byte, d *DDL) ([]byte, bool, error) { return dst, false, nil }

func (f debeziumJSON) AppendRow(dst []byte, r *Row) ([]byte, error) {
	op := "c"
	switch r.Type {
	case TypeUpdate:
		op = "u"
	case TypeDelete:
		op = "d"
	case TypeSnapshot:
		op = "r"
	}
	if f.schema {
		dst = append(dst, `{"schema":`...)
		dst = f.appendSchema(dst, r)
		dst = append(dst, `,"payload":`...)
	}
	var err error
	dst = append(dst, `{"before":`...)
	if dst, err = f.appendImage(dst, r.Before); err != nil {
		return dst, err
	}
	dst = append(dst, `,"after":`...)
	if dst, err = f.appendImage(dst, r.After); err != nil {
		return dst, err
	}
	m := r.Meta
	dst = append(dst, `,"source":{"version":"binlake","connector":"mysql","name":`...)
	dst = jsonenc.AppendString(dst, m.Instance)
	dst = append(dst, `,"ts_ms":`...)
	dst = strconv.AppendInt(dst, m.TS*1000, 10)
	dst = append(dst, `,"ts_us":`...)
	dst = strconv.AppendInt(dst, m.TS*1_000_000, 10)
	dst = append(dst, `,"ts_ns":`...)
	dst = strconv.AppendInt(dst, m.TS*1_000_000_000, 10)
	dst = append(dst, `,"snapshot":`...)
	if r.Type == TypeSnapshot {
		dst = append(dst, `"true"`...)
	} else {
		dst = append(dst, `"false"`...)
	}
	dst = append(dst, `,"db":`...)
	dst = jsonenc.AppendString(dst, r.Table.Database)
	dst = append(dst, `,"sequence":null,"table":`...)
	dst = jsonenc.AppendString(dst, r.Table.Name)
	dst = append(dst, `,"server_id":0,"gtid":`...)
	if m.GTID != "" {
		dst = jsonenc.AppendString(dst, m.GTID)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"file":`...)
	dst = jsonenc.AppendString(dst, m.File)
	dst = append(dst, `,"pos":`...)
	dst = strconv.AppendUint(dst, uint64(cmp.Or(m.EventPos, m.Pos)), 10) // Debezium's: where the rows event starts
	dst = append(dst, `,"row":`...)
	dst = strconv.AppendInt(dst, int64(r.indexInEvent()), 10)
	dst = append(dst, `,"thread":null,"query":null},"op":"`...)
	dst = append(dst, op...)
	now := wallNow()
	dst = append(dst, `","ts_ms":`...)
	dst = strconv.AppendInt(dst, now.UnixMilli(), 10)
	dst = append(dst, `,"ts_us":`...)
	dst = strconv.AppendInt(dst, now.UnixMicro(), 10)
	dst = append(dst, `,"ts_ns":`...)
	dst = strconv.AppendInt(dst, now.UnixNano(), 10)
	dst = append(dst, `,"transaction":null}`...)
	if f.schema {
		dst = append(dst, '}')
	}
	return dst, nil
}

// appendImage appends a row image as a JSON object, or null.
// OwnKey implements KeyFormat: Debezium's key, unless the option key is binlake.
func (f debeziumJSON) OwnKey() bool { return !f.binlakeKey }

// AppendRowKey implements KeyFormat: Debezium's key of the row image im, its primary
// key's columns as a struct rendered as their values are, with schema: true wrapped as
// {schema, payload} under the record name <instance>.<db>.<table>.Key. BinLake's own key
// (db.table:[7]) was no JSON: Kafka Connect's JsonConverter failed on every record, and a
// sink keyed on the record key could apply no delete (an outside trial).
func (f debeziumJSON) AppendRowKey(dst []byte, r *Row, im Image) ([]byte, error) {
	t := r.Table
	if f.schema {
		dst = append(dst, `{"schema":{"type":"struct","fields":[`...)
		for i, ci := range t.PK {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = f.appendFieldSchema(dst, im, ci)
		}
		dst = append(dst, `],"optional":false,"name":`...)
		dst = appendSchemaName(dst, r, ".Key")
		dst = append(dst, `},"payload":`...)
	}
	dst = append(dst, '{')
	var err error
	for i, ci := range t.PK {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendColumnKey(dst, &t.Columns[ci])
		if dst, err = f.appendValue(dst, im, ci); err != nil {
			return dst, err
		}
	}
	dst = append(dst, '}')
	if f.schema {
		dst = append(dst, '}')
	}
	return dst, nil
}

// AppendKeylessKey implements KeyFormat: Debezium's key of a table without a primary key
// is null, which JsonConverter reads from the JSON null (with schema: true, the envelope
// of no schema and a null payload). BinLake's db.table was no JSON: JsonConverter failed
// on every record of such a table (an outside trial). Every keyless table's rows share
// the partition of that key, each table's in order.
func (f debeziumJSON) AppendKeylessKey(dst []byte, _ *Row) []byte {
	if f.schema {
		return append(dst, `{"schema":null,"payload":null}`...)
	}
	return append(dst, "null"...)
}

func (f debeziumJSON) appendImage(dst []byte, im Image) ([]byte, error) {
	if im.IsNil() {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '{')
	var err error
	for i := range im.t.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendColumnKey(dst, &im.t.Columns[i])
		if dst, err = f.appendValue(dst, im, i); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendValue appends column col of im as Debezium renders it under the format's options:
// integers and YEAR as numbers, FLOAT and DOUBLE as numbers as Java writes them (0.0, as
// JsonConverter without schemas then reads a double, not a long), BIT(1) as a boolean and a wider BIT as
// Debezium's Bits (base64 of its little-endian bytes; a number when its width is not
// known), ENUM and SET ("a,b") and text as
// strings, JSON as its text in a string (io.debezium.data.Json), binary values as base64
// (binary.handling.mode=bytes), GEOMETRY as Debezium's Geometry or Point struct
// (appendDebeziumGeometry), DECIMAL and the temporal types per the options; MySQL's
// zero dates as null (what Debezium sends for them).
func (f debeziumJSON) appendValue(dst []byte, im Image, col int) ([]byte, error) {
	at := len(dst)
	dst, err := im.AppendJSON(dst, col)
	if err != nil {
		return dst, err
	}
	tok := dst[at:]
	if im.isSQLNull(col, tok) {
		return dst, nil
	}
	c := &im.t.Columns[col]
	if c.Type == mysql.MYSQL_TYPE_GEOMETRY {
		if c.Geometry == GeometryPoint {
			return rewriteTail(dst, at, appendDebeziumPoint), nil
		}
		return rewriteTail(dst, at, appendDebeziumGeometry), nil
	}
	switch kindOf(c) {
	case kindInt:
		if f.preciseUnsigned(c) {
			return rewriteTail(dst, at, appendIntegerBytes), nil
		}
	case kindFloat:
		return rewriteTail(dst, at, appendJavaFloat32), nil
	case kindDouble:
		return rewriteTail(dst, at, appendJavaFloat64), nil
	case kindDecimal:
		switch f.decimal {
		case "double":
			return rewriteTail(dst, at, appendUnquoted), nil
		case "precise":
			return rewriteTail(dst, at, appendDecimalBytes), nil
		}
	case kindJSON:
		return rewriteTail(dst, at, appendJSONText), nil
	case kindBit:
		if c.Bits > 0 {
			return appendDebeziumBits(dst, at, c.Bits), nil
		}
	case kindDate:
		if isZeroDate(tok) {
			return f.appendZeroDate(dst[:at], c), nil
		}
		if f.epoch {
			return requiredEpoch(rewriteTail(dst, at, appendEpochDays), at, c), nil
		}
	case kindTime:
		if f.epoch {
			return rewriteTail(dst, at, appendTimeMicros), nil
		}
	case kindDatetime:
		switch {
		case isZeroDate(tok):
			return f.appendZeroDate(dst[:at], c), nil
		case f.epoch && c.Frac > 3:
			return requiredEpoch(rewriteTail(dst, at, appendEpochMicros), at, c), nil
		case f.epoch:
			return requiredEpoch(rewriteTail(dst, at, appendEpochMillis), at, c), nil
		}
		return rewriteTail(dst, at, appendSQLTemporal), nil
	case kindTimestamp:
		switch {
		case isZeroDate(tok) && f.epoch:
			// MySQL stores the zero TIMESTAMP as second 0 of the epoch, and Debezium
			// sends that, with the column's digits.
			dst = append(dst[:at], `"1970-01-01T00:00:00`...)
			if c.Frac > 0 {
				dst = append(append(dst, '.'), "000000"[:min(c.Frac, 6)]...)
			}
			return append(dst, `Z"`...), nil
		case isZeroDate(tok):
			return append(dst[:at], "null"...), nil
		case f.epoch:
			return dst, nil // io.debezium.time.ZonedTimestamp: ISO 8601 in UTC, as json writes it
		}
		return rewriteTail(dst, at, appendSQLTemporal), nil
	}
	return dst, nil
}

// requiredEpoch is dst with the epoch value at dst[at:], a null for a date with a zero
// year, month or day (debeziumUnreadable), made 0 in a NOT NULL column, as Debezium
// sends it: its schema is required, and JsonConverter refused the null (an outside trial).
func requiredEpoch(dst []byte, at int, c *Column) []byte {
	if c.NotNull && string(dst[at:]) == "null" {
		return append(dst[:at], '0')
	}
	return dst
}

// appendZeroDate appends a zero DATE's or DATETIME's value: null, or under temporal:
// epoch in a NOT NULL column 0 (the epoch's day or millisecond), as Debezium sends them.
func (f debeziumJSON) appendZeroDate(dst []byte, c *Column) []byte {
	if f.epoch && c.NotNull {
		return append(dst, '0')
	}
	return append(dst, "null"...)
}

// required reports whether column c's schema is not optional: a key column, or one
// declared NOT NULL that has a value for each of its values (under temporal: string a
// zero date is null).
func (f debeziumJSON) required(c *Column) bool {
	if c.PK {
		return true
	}
	if !c.NotNull {
		return false
	}
	switch kindOf(c) {
	case kindDate, kindDatetime, kindTimestamp:
		return f.epoch
	}
	return true
}

// appendDebeziumBits rewrites the BIT value at dst[at:] (a JSON number) as Debezium's
// MySQL connector sends a BIT(width): BIT(1) a boolean, a wider one io.debezium.data.Bits,
// its bits little-endian in (width+7)/8 bytes, base64 in JSON.
func appendDebeziumBits(dst []byte, at int, width uint8) []byte {
	v, err := strconv.ParseUint(string(dst[at:]), 10, 64)
	if err != nil {
		return dst // not a number: left as it came
	}
	dst = dst[:at]
	if width == 1 {
		return strconv.AppendBool(dst, v != 0)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return appendBase64Token(dst, b[:(int(width)+7)/8])
}

// preciseUnsigned reports whether column c is a BIGINT UNSIGNED sent as Kafka Connect's
// Decimal (bigint_unsigned: precise): an int64 in the schema reads one above 2⁶³−1 wrapped.
func (f debeziumJSON) preciseUnsigned(c *Column) bool {
	return f.unsignedPrecise && c.Unsigned && c.Type == mysql.MYSQL_TYPE_LONGLONG
}

// appendIntegerBytes appends an integer token (a JSON number) as Kafka Connect's Decimal
// of scale 0 in JSON: base64 of its big-endian two's-complement bytes.
func appendIntegerBytes(dst, tok []byte) []byte {
	v, ok := new(big.Int).SetString(string(tok), 10)
	if !ok {
		return append(dst, tok...)
	}
	return appendBase64Token(dst, twosComplement(v))
}

// appendDecimalBytes appends a decimal token as Kafka Connect's Decimal in JSON: base64
// of the unscaled value's big-endian two's-complement bytes (the scale is in the schema).
func appendDecimalBytes(dst, tok []byte) []byte {
	digits := make([]byte, 0, len(tok))
	for _, c := range tok[1 : len(tok)-1] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	v, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return append(dst, tok...)
	}
	return appendBase64Token(dst, twosComplement(v))
}

// twosComplement is v's minimal big-endian two's-complement bytes (Java's
// BigInteger.toByteArray, which Kafka Connect's Decimal uses).
func twosComplement(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -v - 1, inverted, is v's two's complement.
	n := new(big.Int).Neg(v)
	n.Sub(n, big.NewInt(1))
	b := n.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// appendDebeziumGeometry appends a GEOMETRY token (base64 of MySQL's SRID and WKB) as
// Debezium's MySQL connector sends a value of a column that is not a POINT
// (io.debezium.data.geometry.Geometry): {"wkb": base64 of the WKB without the SRID,
// "srid": the SRID, null for 0}. A value that is not an SRID and a geometry stays the
// base64 token.
func appendDebeziumGeometry(dst, tok []byte) []byte {
	n := len(dst)
	dst = decodeBase64Token(dst, tok)
	m := len(dst)
	srid, wkb, ok := splitGeometry(dst[n:])
	if !ok {
		return append(dst[:n], tok...)
	}
	dst = append(dst, `{"wkb":`...)
	dst = appendBase64Token(dst, wkb)
	dst = appendDebeziumSRID(dst, srid)
	k := copy(dst[n:], dst[m:]) // over the value's bytes
	return dst[:n+k]
}

// appendDebeziumPoint appends a POINT column's token (base64 of MySQL's SRID and WKB) as
// Debezium's io.debezium.data.geometry.Point: {"x", "y" (as Java's Double.toString
// writes them), "wkb", "srid"}. A value that is not an SRID and a 2-D point stays the
// base64 token.
func appendDebeziumPoint(dst, tok []byte) []byte {
	n := len(dst)
	dst = decodeBase64Token(dst, tok)
	m := len(dst)
	srid, wkb, ok := splitGeometry(dst[n:])
	x, y, isPoint := wkbPoint(wkb)
	if !ok || !isPoint {
		return append(dst[:n], tok...)
	}
	dst = append(dst, `{"x":`...)
	dst = appendJavaFloatValue(dst, x, 64)
	dst = append(dst, `,"y":`...)
	dst = appendJavaFloatValue(dst, y, 64)
	dst = append(dst, `,"wkb":`...)
	dst = appendBase64Token(dst, wkb)
	dst = appendDebeziumSRID(dst, srid)
	k := copy(dst[n:], dst[m:]) // over the value's bytes
	return dst[:n+k]
}

// appendDebeziumSRID ends a geometry struct with its "srid": Java's int of the 4 bytes,
// null for 0 (Debezium's unset SRID).
func appendDebeziumSRID(dst []byte, srid uint32) []byte {
	dst = append(dst, `,"srid":`...)
	if srid == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, int64(int32(srid)), 10)
	}
	return append(dst, '}')
}

func appendBase64Token(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// parseDigits reads n decimal digits of b at i (-1 when they are not digits).
func parseDigits(b []byte, i, n int) int {
	if i+n > len(b) {
		return -1
	}
	v := 0
	for _, c := range b[i : i+n] {
		if c < '0' || c > '9' {
			return -1
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// datetimeOf reads a temporal token "yyyy-MM-dd[Thh:mm:ss[.ffffff]][Z]" as a UTC time.
func datetimeOf(tok []byte) (time.Time, bool) {
	b := tok[1 : len(tok)-1]
	y, mo, d := parseDigits(b, 0, 4), parseDigits(b, 5, 2), parseDigits(b, 8, 2)
	if y < 0 || mo < 0 || d < 0 {
		return time.Time{}, false
	}
	var h, mi, s, us int
	if len(b) >= 19 {
		h, mi, s = parseDigits(b, 11, 2), parseDigits(b, 14, 2), parseDigits(b, 17, 2)
		if h < 0 || mi < 0 || s < 0 {
			return time.Time{}, false
		}
		us = fractionMicros(b[19:])
	}
	return time.Date(y, time.Month(mo), d, h, mi, s, us*1000, time.UTC), true
}

// fractionMicros reads ".ffffff" (any digits up to six; the rest of b ignored) in µs.
func fractionMicros(b []byte) int {
	if len(b) < 2 || b[0] != '.' {
		return 0
	}
	us, n := 0, 0
	for _, c := range b[1:] {
		if c < '0' || c > '9' || n == 6 {
			break
		}
		us, n = us*10+int(c-'0'), n+1
	}
	for ; n < 6; n++ {
		us *= 10
	}
	return us
}

// debeziumUnreadable appends what Debezium's binlog reader (RowDeserializers) gives for
// a DATE or DATETIME token whose date java.time cannot hold, and reports whether it was
// one: null for a zero year, month or day (Debezium's rule for them, as for the zero
// date); for a day past its month's end, which MySQL and MariaDB store under
// ALLOW_INVALID_DATES (2024-02-30) and LocalDate.of refuses, the epoch, 0: Debezium
// fails the event by default, and with event.deserialization.failure.handling.mode warn
// or skip takes 1970-01-01 (LocalDate.EPOCH) for it. An epoch number cannot carry such a
// date; the string renderings (temporal: string) and the other formats carry it as
// stored. time.Date would instead move it into the next month, a real but other date.
func debeziumUnreadable(dst, tok []byte) ([]byte, bool) {
	if len(tok) < 12 {
		return dst, false
	}
	b := tok[1:]
	y, mo, d := parseDigits(b, 0, 4), parseDigits(b, 5, 2), parseDigits(b, 8, 2)
	switch {
	case y < 0 || mo < 0 || d < 0:
		return dst, false // not a date: left as it is
	case y == 0 || mo == 0 || d == 0:
		return append(dst, "null"...), true
	case mo > 12 || d > time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day():
		return append(dst, '0'), true
	}
	return dst, false
}

func appendEpochDays(dst, tok []byte) []byte {
	if out, ok := debeziumUnreadable(dst, tok); ok {
		return out
	}
	t, ok := datetimeOf(tok)
	if !ok {
		return append(dst, tok...)
	}
	days := t.Unix() / 86400
	if t.Unix() < 0 && t.Unix()%86400 != 0 {
		days--
	}
	return strconv.AppendInt(dst, days, 10)
}

func appendEpochMillis(dst, tok []byte) []byte {
	if out, ok := debeziumUnreadable(dst, tok); ok {
		return out
	}
	t, ok := datetimeOf(tok)
	if !ok {
		return append(dst, tok...)
	}
	return strconv.AppendInt(dst, t.UnixMilli(), 10)
}

func appendEpochMicros(dst, tok []byte) []byte {
	if out, ok := debeziumUnreadable(dst, tok); ok {
		return out
	}
	t, ok := datetimeOf(tok)
	if !ok {
		return append(dst, tok...)
	}
	return strconv.AppendInt(dst, t.UnixMicro(), 10)
}

// appendTimeMicros appends a TIME token "[-]h…h:mm:ss[.ffffff]" as µs (MicroTime).
func appendTimeMicros(dst, tok []byte) []byte {
	b := tok[1 : len(tok)-1]
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	colon := 0
	for colon < len(b) && b[colon] != ':' {
		colon++
	}
	h := parseDigits(b, 0, colon)
	mi, s := parseDigits(b, colon+1, 2), parseDigits(b, colon+4, 2)
	if h < 0 || mi < 0 || s < 0 {
		return append(dst, tok...)
	}
	us := int64(h*3600+mi*60+s)*1_000_000 + int64(fractionMicros(b[min(len(b), colon+6):]))
	if neg {
		us = -us
	}
	return strconv.AppendInt(dst, us, 10)
}

// appendSchema appends the JsonConverter schema of the envelope of r's table.
func (f debeziumJSON) appendSchema(dst []byte, r *Row) []byte {
	t := r.Table
	image := r.After
	if image.IsNil() {
		image = r.Before
	}
	dst = append(dst, `{"type":"struct","fields":[`...)
	for i, field := range []string{"before", "after"} {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"struct","fields":[`...)
		for ci := range t.Columns {
			if ci > 0 {
				dst = append(dst, ',')
			}
			dst = f.appendFieldSchema(dst, image, ci)
		}
		dst = append(dst, `],"optional":true,"name":`...)
		dst = appendSchemaName(dst, r, ".Value")
		dst = append(dst, `,"field":"`...)
		dst = append(dst, field...)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `,{"type":"struct","fields":[`+
		`{"type":"string","optional":false,"field":"version"},{"type":"string","optional":false,"field":"connector"},`+
		`{"type":"string","optional":false,"field":"name"},{"type":"int64","optional":false,"field":"ts_ms"},`+
		`{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"},`+
		`{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,last,false,incremental"},"default":"false","field":"snapshot"},`+
		`{"type":"string","optional":false,"field":"db"},{"type":"string","optional":true,"field":"sequence"},`+
		`{"type":"string","optional":true,"field":"table"},{"type":"int64","optional":false,"field":"server_id"},`+
		`{"type":"string","optional":true,"field":"gtid"},{"type":"string","optional":false,"field":"file"},`+
		`{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"},`+
		`{"type":"int64","optional":true,"field":"thread"},{"type":"string","optional":true,"field":"query"}],`+
		`"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"},`+
		`{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},`+
		`{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"},`+
		`{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},`+
		`{"type":"int64","optional":false,"field":"total_order"},{"type":"int64","optional":false,"field":"data_collection_order"}],`+
		`"optional":true,"name":"event.block","version":1,"field":"transaction"}],"optional":false,"name":`...)
	dst = appendSchemaName(dst, r, ".Envelope")
	return append(dst, `,"version":1}`...)
}

// appendSchemaName appends "<instance>.<db>.<table><suffix>" as a JSON string: Debezium's
// record name, its topic prefix being the instance here.
func appendSchemaName(dst []byte, r *Row, suffix string) []byte {
	dst = append(dst, '"')
	dst = appendStringBody(dst, r.Meta.Instance)
	dst = append(dst, '.')
	dst = appendStringBody(dst, r.Table.Database)
	dst = append(dst, '.')
	dst = appendStringBody(dst, r.Table.Name)
	dst = append(dst, suffix...)
	return append(dst, '"')
}

// appendFieldSchema appends the schema of column ci: Kafka Connect's type and
// Debezium's semantic name, under the format's options. A primary key column is not
// optional; the binlog does not say which other columns are NOT NULL, so they are.
func (f debeziumJSON) appendFieldSchema(dst []byte, im Image, ci int) []byte {
	c := &im.t.Columns[ci]
	if c.Type == mysql.MYSQL_TYPE_GEOMETRY {
		return appendGeometrySchema(dst, c)
	}
	typ, name := "string", ""
	var allowed []string // the parameters' "allowed" of an ENUM or SET
	scale := -1          // the parameters' "scale" of a precise DECIMAL
	switch kindOf(c) {
	case kindInt:
		typ = "int32"
		if f.preciseUnsigned(c) {
			typ, name, scale = "bytes", "org.apache.kafka.connect.data.Decimal", 0
			break
		}
		switch c.Type {
		case mysql.MYSQL_TYPE_TINY:
			typ = "int16"
		case mysql.MYSQL_TYPE_SHORT:
			if c.Unsigned {
				typ = "int32"
			} else {
				typ = "int16"
			}
		case mysql.MYSQL_TYPE_LONG:
			if c.Unsigned {
				typ = "int64"
			}
		case mysql.MYSQL_TYPE_LONGLONG:
			typ = "int64"
		}
	case kindFloat:
		typ = "float"
	case kindDouble:
		typ = "double"
	case kindBit:
		switch {
		case c.Bits == 1:
			typ = "boolean"
		case c.Bits > 1:
			typ, name = "bytes", "io.debezium.data.Bits"
		default:
			typ = "int64"
		}
	case kindYear:
		typ, name = "int32", "io.debezium.time.Year"
	case kindDecimal:
		switch f.decimal {
		case "double":
			typ = "double"
		case "precise":
			typ, name = "bytes", "org.apache.kafka.connect.data.Decimal"
			scale = decimalScale(im, ci)
		}
	case kindDate:
		if f.epoch {
			typ, name = "int32", "io.debezium.time.Date"
		}
	case kindTime:
		if f.epoch {
			typ, name = "int64", "io.debezium.time.MicroTime"
		}
	case kindDatetime:
		switch {
		case f.epoch && c.Frac > 3:
			typ, name = "int64", "io.debezium.time.MicroTimestamp"
		case f.epoch:
			typ, name = "int64", "io.debezium.time.Timestamp"
		}
	case kindTimestamp:
		if f.epoch {
			name = "io.debezium.time.ZonedTimestamp"
		}
	case kindEnum:
		name, allowed = "io.debezium.data.Enum", c.Enum
	case kindSet:
		name, allowed = "io.debezium.data.EnumSet", c.Set
	case kindJSON:
		name = "io.debezium.data.Json"
	case kindBinary:
		typ = "bytes"
	}
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","optional":`...)
	dst = strconv.AppendBool(dst, !f.required(c))
	if name != "" {
		dst = append(dst, `,"name":"`...)
		dst = append(dst, name...)
		dst = append(dst, `","version":1`...)
	}
	switch {
	case scale >= 0:
		dst = append(dst, `,"parameters":{"scale":"`...)
		dst = strconv.AppendInt(dst, int64(scale), 10)
		if c.Precision > 0 && name == "org.apache.kafka.connect.data.Decimal" && !f.preciseUnsigned(c) {
			// Debezium's: a sink that creates the table (JDBC's auto.create) makes the column
			// DECIMAL(precision, scale) from it.
			dst = append(dst, `","connect.decimal.precision":"`...)
			dst = strconv.AppendUint(dst, uint64(c.Precision), 10)
		}
		dst = append(dst, `"}`...)
	case name == "io.debezium.data.Bits":
		dst = append(dst, `,"parameters":{"length":"`...)
		dst = strconv.AppendUint(dst, uint64(c.Bits), 10)
		dst = append(dst, `"}`...)
	case name == "io.debezium.data.Enum" || name == "io.debezium.data.EnumSet":
		dst = append(dst, `,"parameters":{"allowed":"`...)
		for i, v := range allowed {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStringBody(dst, v)
		}
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `,"field":`...)
	dst = appendColumnName(dst, c)
	return append(dst, '}')
}

// appendGeometrySchema appends the schema of a GEOMETRY column as Debezium's MySQL
// connector (3.x) declares it: a POINT column's io.debezium.data.geometry.Point (x, y,
// optional wkb and srid), optional unless in the key or NOT NULL; any other's
// io.debezium.data.geometry.Geometry (wkb, optional srid), which its builder makes
// optional always.
func appendGeometrySchema(dst []byte, c *Column) []byte {
	if c.Geometry == GeometryPoint {
		dst = append(dst, `{"type":"struct","fields":[{"type":"double","optional":false,"field":"x"},`+
			`{"type":"double","optional":false,"field":"y"},{"type":"bytes","optional":true,"field":"wkb"},`+
			`{"type":"int32","optional":true,"field":"srid"}],"optional":`...)
		dst = strconv.AppendBool(dst, !c.PK && !c.NotNull)
		dst = append(dst, `,"name":"io.debezium.data.geometry.Point","version":1,"doc":"Geometry (POINT)","field":`...)
	} else {
		dst = append(dst, `{"type":"struct","fields":[{"type":"bytes","optional":false,"field":"wkb"},`+
			`{"type":"int32","optional":true,"field":"srid"}],"optional":true,`+
			`"name":"io.debezium.data.geometry.Geometry","version":1,"doc":"Geometry","field":`...)
	}
	dst = appendColumnName(dst, c)
	return append(dst, '}')
}

// appendColumnName appends a column's name as a JSON string.
func appendColumnName(dst []byte, c *Column) []byte {
	if c.key != nil {
		return append(dst, c.key[:len(c.key)-1]...) // `"<Name>":` without the colon
	}
	return jsonenc.AppendString(dst, c.Name)
}

// decimalScale is the digits after the point of a DECIMAL column: the column's own
// (its definition, from the table map or the snapshot's metadata, or as read in place),
// else those of the image's value: 0 for a NULL, which made the column's schema change
// with its values (an outside trial).
func decimalScale(im Image, ci int) int {
	c := &im.t.Columns[ci]
	if c.Precision > 0 {
		return int(c.Scale)
	}
	if c.raw.kind == rawDecimal {
		return int(c.raw.scale)
	}
	tok, err := im.AppendJSON(nil, ci)
	if err != nil || len(tok) < 2 || tok[0] != '"' {
		return 0
	}
	for i, c := range tok {
		if c == '.' {
			return len(tok) - i - 2
		}
	}
	return 0
}
