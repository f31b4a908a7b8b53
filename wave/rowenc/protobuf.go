package rowenc

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// The `protobuf` format: BinLake's row message as a binlake.v1.Row (proto/binlake/v1/
// row.proto; its generated Go types are wave/rowenc/rowpb). The encoder writes the wire
// format itself with protowire, appending to the caller's buffer as the JSON encoder
// does, instead of building a rowpb.Row per row and marshalling it (an allocation per
// field): the .proto and the generated types are the contract, and the tests decode
// what it writes with them. Fields come in field-number order, each once, zero values
// left out as proto.Marshal leaves them, so the bytes are those proto.Marshal would
// write for the same Row.

// Field numbers of binlake.v1.Row and binlake.v1.Field.
const (
	pbRowInstance protowire.Number = 1
	pbRowDatabase protowire.Number = 2
	pbRowTable    protowire.Number = 3
	pbRowType     protowire.Number = 4
	pbRowTS       protowire.Number = 5
	pbRowGTID     protowire.Number = 6
	pbRowFile     protowire.Number = 7
	pbRowPos      protowire.Number = 8
	pbRowXID      protowire.Number = 9
	pbRowCommit   protowire.Number = 10
	pbRowPK       protowire.Number = 11
	pbRowData     protowire.Number = 12
	pbRowOld      protowire.Number = 13
	pbRowSQL      protowire.Number = 14

	pbFieldName   protowire.Number = 1
	pbFieldNull   protowire.Number = 2
	pbFieldInt    protowire.Number = 3
	pbFieldUint   protowire.Number = 4
	pbFieldFloat  protowire.Number = 5
	pbFieldDouble protowire.Number = 6
	pbFieldString protowire.Number = 7
	pbFieldBytes  protowire.Number = 8
	pbFieldJSON   protowire.Number = 9
)

// pbType is the binlake.v1.Type of a message type; 0 (TYPE_UNSPECIFIED) for none.
func pbType(typ string) uint64 {
	switch typ {
	case TypeInsert:
		return 1
	case TypeUpdate:
		return 2
	case TypeDelete:
		return 3
	case TypeDDL:
		return 4
	case TypeSnapshot:
		return 5
	}
	return 0
}

// appendPBString appends a string field unless it is empty (proto3's default). A
// protobuf string must be UTF-8 (Go's proto.Unmarshal refuses one that is not): invalid
// bytes become U+FFFD, as in the JSON form.
func appendPBString(dst []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	if !utf8.ValidString(s) {
		return protowire.AppendBytes(dst, appendValidUTF8(nil, bytesOf(s)))
	}
	return protowire.AppendString(dst, s)
}

// appendValidUTF8 appends b with each byte that is not part of valid UTF-8 replaced by
// U+FFFD, as jsonenc.AppendString replaces them.
func appendValidUTF8(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, b[i:i+size]...)
		}
		i += size
	}
	return dst
}

// appendPBVarint appends a varint field unless it is 0.
func appendPBVarint(dst []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

// appendPBHeader appends a Row's fields 1 to 8, the same for every row of an event.
func appendPBHeader(dst []byte, db, table, typ string, m Meta) []byte {
	dst = appendPBString(dst, pbRowInstance, m.Instance)
	dst = appendPBString(dst, pbRowDatabase, db)
	dst = appendPBString(dst, pbRowTable, table)
	dst = appendPBVarint(dst, pbRowType, pbType(typ))
	dst = appendPBVarint(dst, pbRowTS, uint64(m.TS))
	dst = appendPBString(dst, pbRowGTID, m.GTID)
	dst = appendPBString(dst, pbRowFile, m.File)
	return appendPBVarint(dst, pbRowPos, uint64(m.Pos))
}

// appendPBHead appends appendPBHeader's fields, copied from s when the last row encoded
// with s had the same ones (the rows of one event do, but for commit and xid, which
// appendPBCommit writes), as the JSON encoder copies an event's header.
func appendPBHead(dst []byte, s *typedScratch, t *Table, typ string, m Meta) []byte {
	m.Commit, m.XID = false, 0
	if s.headT != t || s.headType != typ || s.headMeta != m || s.head == nil {
		s.head = appendPBHeader(s.head[:0], t.Database, t.Name, typ, m)
		s.headT, s.headType, s.headMeta = t, typ, m
	}
	return append(dst, s.head...)
}

// appendPBCommit appends a Row's xid and commit (fields 9 and 10), set on a
// transaction's last row only.
func appendPBCommit(dst []byte, m Meta) []byte {
	dst = appendPBVarint(dst, pbRowXID, m.XID)
	if m.Commit {
		dst = appendPBVarint(dst, pbRowCommit, 1)
	}
	return dst
}

// EncodeRowProto appends the protobuf row message (binlake.v1.Row) of one row change to
// dst: EncodeRow's message in the `protobuf` format, from the same go-mysql values.
func EncodeRowProto(dst []byte, t *Table, typ string, m Meta, before, after []any) ([]byte, error) {
	dst = appendPBHeader(dst, t.Database, t.Name, typ, m)
	dst = appendPBCommit(dst, m)
	var s typedScratch
	return encodePBRow(dst, &s, t, values(before), values(after))
}

// EncodeDDLProto appends the protobuf message of a DDL statement to dst (EncodeDDL's).
func EncodeDDLProto(dst []byte, database, table string, m Meta, sql string) []byte {
	dst = appendPBHeader(dst, database, table, TypeDDL, m)
	dst = appendPBCommit(dst, m)
	return appendPBString(dst, pbRowSQL, sql)
}

// encodePBRow appends a Row's pk, data and old (fields 11 to 13), as encodeRow appends
// the JSON's.
func encodePBRow[I typedImage[I]](dst []byte, s *typedScratch, t *Table, before, after I) ([]byte, error) {
	image := after
	if image.isNil() {
		image = before
	}
	if image.len() != len(t.Columns) || (!before.isNil() && !after.isNil() && before.len() != after.len()) {
		return dst, errColumnCount(t, image.len())
	}
	names := t.pbNames
	if names == nil {
		names = pbFieldNames(t) // an unprepared table (tests)
	}
	var err error
	for _, ci := range t.PK {
		if dst, err = appendPBField(dst, s, pbRowPK, names[ci], &t.Columns[ci], image, ci); err != nil {
			return dst, err
		}
	}
	for i := range t.Columns {
		if dst, err = appendPBField(dst, s, pbRowData, names[i], &t.Columns[i], image, i); err != nil {
			return dst, err
		}
	}
	if before.isNil() || after.isNil() {
		return dst, nil
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		same, err := before.sameAs(after, c, i)
		if err != nil {
			return dst, err
		}
		if !same {
			if dst, err = appendPBField(dst, s, pbRowOld, names[i], c, before, i); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// errColumnCount is the error of a row whose image does not fit its table (encodeRow's).
func errColumnCount(t *Table, n int) error {
	return fmt.Errorf("%s.%s: row has %d values, table map %d columns", t.Database, t.Name, n, len(t.Columns))
}

// appendPBField appends column i of image as a binlake.v1.Field in the Row's field num,
// in one pass: the tag, a byte for the length (a Field is seldom longer than 127
// bytes), the name (pbFieldNames), the value written where it lands (appendPBValue);
// then the length goes into its byte, the body moved only when it needs more.
func appendPBField[I typedImage[I]](dst []byte, s *typedScratch, num protowire.Number, name []byte, c *Column, image I, i int) ([]byte, error) {
	dst, l := pbBegin(dst, num, 1)
	dst = append(dst, name...)
	dst, err := image.appendPB(dst, s, c, i)
	if err != nil {
		return dst, err
	}
	return pbEnd(dst, l), nil
}

// pbFieldNames is each column's name as a Field's encoded name field (tag, length,
// name), for Table.Prepare to keep: a row copies it.
func pbFieldNames(t *Table) [][]byte {
	names := make([][]byte, len(t.Columns))
	for i := range t.Columns {
		names[i] = appendPBString(nil, pbFieldName, t.Columns[i].Name)
	}
	return names
}

// pbLen is a length-delimited field being written: where its length goes and the
// bytes left for it (pbBegin).
type pbLen struct{ at, room int }

// zeros is what pbEnd grows a buffer by.
var zeros [binaryVarintMax]byte

const binaryVarintMax = 10

// pbBegin appends the tag of a length-delimited field and room bytes for its length
// (the size the caller expects the body's length to take), and returns where they are;
// pbEnd then writes the length there. The body is written once, in place, instead of
// being sized by a first pass or rendered aside and copied, and moved only when its
// length takes another number of bytes than room.
func pbBegin(dst []byte, num protowire.Number, room int) ([]byte, pbLen) {
	if num < 16 { // a one-byte tag, as AppendTag writes it, without its call: per field and row
		dst = append(dst, byte(num)<<3|byte(protowire.BytesType))
	} else {
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
	}
	l := pbLen{at: len(dst), room: room}
	for range room {
		dst = append(dst, 0) // cheaper than appending a slice of zeros for a byte or two
	}
	return dst, l
}

func pbEnd(dst []byte, l pbLen) []byte {
	body := l.at + l.room
	n := len(dst) - body
	if n < 0x80 && l.room == 1 {
		dst[l.at] = byte(n)
		return dst
	}
	if sz := protowire.SizeVarint(uint64(n)); sz != l.room {
		if sz > l.room {
			dst = append(dst, zeros[:sz-l.room]...)
		}
		copy(dst[l.at+sz:], dst[body:body+n])
		dst = dst[:l.at+sz+n]
	}
	protowire.AppendVarint(dst[l.at:l.at], uint64(n))
	return dst
}
