package rowenc

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/binlake/binlake/internal/jsonenc"
)

// The `protobuf` format's values: each image kind writes a binlake.v1.Field's value (its
// oneof member) straight into the message. A field read in place is written as it is
// decoded, deciding as appendRaw decides its JSON; go-mysql's values and a snapshot's
// are first typed (typedvalue.go), then written.

// typedImage is a row image whose values the protobuf format can write.
type typedImage[I any] interface {
	rowImage[I]
	// appendPB appends column i's value, described by c, as a Field's value.
	appendPB(dst []byte, s *typedScratch, c *Column, i int) ([]byte, error)
}

func (v values) appendPB(dst []byte, s *typedScratch, c *Column, i int) ([]byte, error) {
	tv, err := typedOf(s, c, v[i])
	if err != nil {
		return dst, err
	}
	return appendPBValue(dst, c, tv), nil
}

func (r QueryRow) appendPB(dst []byte, s *typedScratch, c *Column, i int) ([]byte, error) {
	tv, err := r.typed(s, c, i)
	if err != nil {
		return dst, err
	}
	return appendPBValue(dst, c, tv), nil
}

// appendPB is appendRaw's decision for a field read in place, written as a Field's
// value in the same pass: numbers, decimals and temporal values without a detour
// through a typedValue or a scratch buffer, text and blobs through typedText and
// typedBytes, which decide what they are (JSON, binary, text) for every image kind.
func (r rawImage) appendPB(dst []byte, s *typedScratch, c *Column, i int) ([]byte, error) {
	if r.spans[i].n < 0 {
		return appendPBNull(dst), nil
	}
	b := r.field(i)
	rc := &c.raw
	switch rc.kind {
	case rawInt:
		v := uintLE(b)
		if c.Unsigned {
			return appendPBUint(dst, v), nil
		}
		return appendPBInt(dst, signExtend(v, len(b))), nil
	case rawYear:
		if b[0] == 0 {
			return appendPBInt(dst, 0), nil
		}
		return appendPBInt(dst, int64(b[0])+1900), nil
	case rawFloat:
		return appendPBValue(dst, c, typedFloat(float64(rawFloat32(b)), tvFloat)), nil
	case rawDouble:
		return appendPBValue(dst, c, typedFloat(rawFloat64(b), tvDouble)), nil
	case rawBit:
		return appendPBUint(dst, uintBE(b)), nil
	case rawEnum, rawSet:
		return appendPBValue(dst, c, typedInt64(s, c, int64(uintLE(b)))), nil
	case rawString:
		return appendPBValue(dst, c, typedText(s, c, stringOf(b[rc.width:]))), nil
	case rawBlob:
		return appendPBValue(dst, c, typedBytes(c, b[rc.width:])), nil
	case rawDecimal:
		// A decimal's text is ASCII, 67 bytes at most: its length takes one byte.
		dst, l := pbBegin(dst, pbFieldString, 1)
		dst, err := appendDecimalText(dst, b, int(rc.prec), int(rc.scale))
		if err != nil {
			return dst, fmt.Errorf("column %s: %w", c.Name, err)
		}
		return pbEnd(dst, l), nil
	case rawTimestamp2:
		if sec, usec := int64(uintBE(b[:4])), fracMicros(b[4:], rc.dec); sec != 0 {
			return appendPBTime(dst, c, time.Unix(sec, usec*1000)), nil
		}
	case rawDatetime2: // at most 29 ASCII bytes: one for the length
		dst, l := pbBegin(dst, pbFieldString, 1)
		return pbEnd(appendDatetime2(dst, b, rc.dec, 'T'), l), nil
	}
	text, err := appendRawText(s.text[:0], rc, b)
	s.text = text
	if err != nil {
		return dst, fmt.Errorf("column %s: %w", c.Name, err)
	}
	return appendPBValue(dst, c, typedText(s, c, stringOf(text))), nil
}

// appendPBValue appends a typed value as a Field's value: the oneof member of its kind.
// A member of a oneof is written even when it holds its zero value (an int 0, an empty
// string). The values typed leaves unrendered (a time, a JSON document) are rendered
// here, straight into dst, and text is made valid UTF-8 (see appendPBString) as it is
// copied.
func appendPBValue(dst []byte, c *Column, v typedValue) []byte {
	switch v.kind {
	case tvInt:
		return appendPBInt(dst, v.i)
	case tvUint:
		return appendPBUint(dst, v.u)
	case tvFloat:
		dst = protowire.AppendTag(dst, pbFieldFloat, protowire.Fixed32Type)
		return protowire.AppendFixed32(dst, math.Float32bits(float32(v.f)))
	case tvDouble:
		dst = protowire.AppendTag(dst, pbFieldDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(dst, math.Float64bits(v.f))
	case tvString:
		return appendPBText(dst, pbFieldString, v.b)
	case tvASCII:
		dst = protowire.AppendTag(dst, pbFieldString, protowire.BytesType)
		return protowire.AppendBytes(dst, v.b)
	case tvBytes:
		dst = protowire.AppendTag(dst, pbFieldBytes, protowire.BytesType)
		return protowire.AppendBytes(dst, v.b)
	case tvJSON:
		return appendPBJSON(dst, v.b)
	case tvTime:
		return appendPBTime(dst, c, time.Unix(v.i, int64(v.u)).UTC())
	}
	return appendPBNull(dst)
}

func appendPBInt(dst []byte, x int64) []byte {
	dst = protowire.AppendTag(dst, pbFieldInt, protowire.VarintType)
	return protowire.AppendVarint(dst, protowire.EncodeZigZag(x))
}

func appendPBUint(dst []byte, x uint64) []byte {
	dst = protowire.AppendTag(dst, pbFieldUint, protowire.VarintType)
	return protowire.AppendVarint(dst, x)
}

func appendPBNull(dst []byte) []byte {
	dst = protowire.AppendTag(dst, pbFieldNull, protowire.VarintType)
	return protowire.AppendVarint(dst, 1)
}

// appendPBTime appends a DATETIME or TIMESTAMP as appendTime's text, as a string: at
// most 32 ASCII bytes, its length one byte.
func appendPBTime(dst []byte, c *Column, t time.Time) []byte {
	dst, l := pbBegin(dst, pbFieldString, 1)
	return pbEnd(appendTimeText(dst, c, t), l)
}

// appendPBText appends text as the string field num, its bytes that are not valid UTF-8
// replaced (appendValidUTF8): room for the length of valid text, moved for one that
// grew.
func appendPBText(dst []byte, num protowire.Number, text []byte) []byte {
	dst, l := pbBegin(dst, num, protowire.SizeVarint(uint64(len(text))))
	return pbEnd(appendValidUTF8(dst, text), l)
}

// appendPBJSON appends a JSON column's document (trimmed, not empty) as appendJSONDoc
// embeds it: compacted into the json member, or kept as a string when it is not JSON.
func appendPBJSON(dst, doc []byte) []byte {
	tag := len(dst)
	dst, l := pbBegin(dst, pbFieldJSON, protowire.SizeVarint(uint64(len(doc))))
	body := len(dst)
	out, ok := jsonenc.AppendCompact(dst, doc)
	if !ok {
		return appendPBText(dst[:tag], pbFieldString, doc)
	}
	if !utf8.Valid(out[body:]) {
		// Rare: a document with invalid bytes in its strings. Compacted again, into a
		// buffer of its own, to be copied back valid.
		compact, _ := jsonenc.AppendCompact(nil, doc)
		out = appendValidUTF8(out[:body], compact)
	}
	return pbEnd(out, l)
}
