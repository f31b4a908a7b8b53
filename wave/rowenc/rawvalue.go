package rowenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// appendRaw appends the JSON of one column field read in place (b is the whole field,
// length prefix included). Each kind yields what go-mysql's decodeValue would have
// handed appendValue (rowsDecoder's way for a DATETIME), formatted without the detour:
// integers and floats directly, a DATETIME's text straight from the field, a TIMESTAMP
// through the time.Time go-mysql makes of it, the values go-mysql gives as text
// (decimals, dates, times, the zero TIMESTAMP) written as that same text into a scratch
// buffer and then through appendText, so that the column's meaning (JSON, binary,
// temporal 'T') is decided in one place for both ways.
func appendRaw(dst []byte, c *Column, b []byte) ([]byte, error) {
	rc := &c.raw
	switch rc.kind {
	case rawInt:
		v := uintLE(b)
		if c.Unsigned {
			return strconv.AppendUint(dst, v, 10), nil
		}
		return strconv.AppendInt(dst, signExtend(v, len(b)), 10), nil
	case rawYear:
		if b[0] == 0 {
			return append(dst, '0'), nil
		}
		return strconv.AppendInt(dst, int64(b[0])+1900, 10), nil
	case rawFloat:
		return appendFloat(dst, float64(rawFloat32(b)), 32), nil
	case rawDouble:
		return appendFloat(dst, rawFloat64(b), 64), nil
	case rawBit:
		return appendInt64(dst, c, int64(uintBE(b))), nil
	case rawEnum, rawSet:
		return appendInt64(dst, c, int64(uintLE(b))), nil
	case rawString:
		return appendText(dst, c, stringOf(b[rc.width:])), nil
	case rawBlob:
		return appendBytes(dst, c, b[rc.width:]), nil
	case rawTimestamp2:
		sec, usec := int64(uintBE(b[:4])), fracMicros(b[4:], rc.dec)
		if sec != 0 {
			return appendTime(dst, c, time.Unix(sec, usec*1000)), nil
		}
	case rawDatetime2:
		// The stored parts as they are, a day past its month's end included (what
		// ALLOW_INVALID_DATES stores): digits only, nothing to escape.
		return append(appendDatetime2(append(dst, '"'), b, rc.dec, 'T'), '"'), nil
	}
	// The text goes through a pooled buffer: appendText may hand it to the JSON
	// compactor, through which escape analysis sees a stack buffer escape.
	s := scratchPool.Get().(*[2][]byte)
	defer scratchPool.Put(s)
	text, err := appendRawText(s[0][:0], rc, b)
	s[0] = text
	if err != nil {
		return dst, fmt.Errorf("column %s: %w", c.Name, err)
	}
	return appendText(dst, c, stringOf(text)), nil
}

// appendRawText appends the text go-mysql makes of the kinds it hands over as strings
// (a DATETIME's as rowsDecoder has it written: appendPackedDatetime).
func appendRawText(dst []byte, rc *rawCol, b []byte) ([]byte, error) {
	switch rc.kind {
	case rawDecimal:
		return appendDecimalText(dst, b, int(rc.prec), int(rc.scale))
	case rawDate:
		v := uintLE(b)
		if v == 0 {
			return append(dst, "0000-00-00"...), nil
		}
		return appendDate(dst, int(v/(16*32)), int(v/32%16), int(v%32)), nil
	case rawTime2:
		return appendTime2Text(dst, b, int(rc.dec)), nil
	case rawTimestamp2:
		return appendZeroTime(dst, int(fracMicros(b[4:], rc.dec)), int(rc.dec)), nil
	case rawDatetime2:
		return appendDatetime2(dst, b, rc.dec, ' '), nil
	}
	return dst, fmt.Errorf("no text form for column kind %d", rc.kind)
}

func rawFloat32(b []byte) float32 { return math.Float32frombits(uint32(uintLE(b))) }
func rawFloat64(b []byte) float64 { return math.Float64frombits(uintLE(b)) }

// fracMicros is the fractional part of a TIME2, DATETIME2 or TIMESTAMP2 in microseconds:
// dec digits stored big-endian in (dec+1)/2 bytes.
func fracMicros(b []byte, dec uint8) int64 {
	switch dec {
	case 1, 2:
		return int64(b[0]) * 10000
	case 3, 4:
		return int64(uintBE(b[:2])) * 100
	case 5, 6:
		return int64(uintBE(b[:3]))
	}
	return 0
}

// datetimeIntOffset is what MySQL adds to a DATETIME2's integer part.
const datetimeIntOffset = 0x8000000000

// datetime2Parts splits a DATETIME2 field as decodeDatetime2 does.
func datetime2Parts(b []byte, dec uint8) (intPart int64, year, month, day, hour, minute, second int, frac int64) {
	intPart = int64(uintBE(b[:5])) - datetimeIntOffset
	frac = fracMicros(b[5:], dec)
	tmp := intPart<<24 + frac
	if tmp < 0 {
		tmp = -tmp
	}
	ymdhms := tmp >> 24
	ymd, hms := ymdhms>>17, ymdhms%(1<<17)
	ym := ymd >> 5
	day, month, year = int(ymd%(1<<5)), int(ym%13), int(ym/13)
	second, minute, hour = int(hms%(1<<6)), int((hms>>6)%(1<<6)), int(hms>>12)
	return intPart, year, month, day, hour, minute, second, frac
}

// appendDatetime2 appends a DATETIME2 field as go-mysql's text of it with ParseTime off
// (formatDatetime's "%04d-%02d-%02d %02d:%02d:%02d" and the fraction cut to dec digits,
// or formatZeroTime's for the zero value), with sep between date and clock. The parts
// are written as stored, never through a time.Time: time.Date would move a day past its
// month's end (2024-02-30, which MySQL and MariaDB store under ALLOW_INVALID_DATES) into
// the next month, and the value published would not be the one stored.
func appendDatetime2(dst, b []byte, dec, sep byte) []byte {
	intPart, year, month, day, hour, minute, second, frac := datetime2Parts(b, dec)
	if intPart == 0 {
		dst = append(dst, "0000-00-00"...)
		dst = append(dst, sep)
		dst = append(dst, "00:00:00"...)
		return appendFraction(dst, int(frac), int(dec))
	}
	dst = append(appendDate(dst, year, month, day), sep)
	dst = appendClock(dst, hour, minute, second)
	return appendFraction(dst, int(frac), int(dec))
}

// datetime2Width is the width in bytes of a DATETIME2(dec) field.
func datetime2Width(dec uint8) int { return 5 + int(dec+1)/2 }

// appendPackedDatetime appends a DATETIME or DATETIME2 column c's value as rowsDecoder
// has go-mysql hand it over, an int64 of the field (a DATETIME2's bytes, big-endian; a
// DATETIME's packed decimal YYYYMMDDhhmmss), as its stored date and clock with sep
// between them: the text go-mysql makes of it with ParseTime off (appendDatetime2 for a
// DATETIME2, as the rows read in place write it).
func appendPackedDatetime(dst []byte, c *Column, x int64, sep byte) []byte {
	if c.Type == mysql.MYSQL_TYPE_DATETIME {
		v := uint64(x)
		if v == 0 {
			dst = append(dst, "0000-00-00"...)
			dst = append(dst, sep)
			return append(dst, "00:00:00"...)
		}
		d, t := v/1000000, v%1000000
		dst = append(appendDate(dst, int(d/10000), int(d%10000/100), int(d%100)), sep)
		return appendClock(dst, int(t/10000), int(t%10000/100), int(t%100))
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(x))
	dec := min(c.Frac, 6)
	return appendDatetime2(dst, b[8-datetime2Width(dec):], dec, sep)
}

// appendZeroTime is go-mysql's zero DATETIME or TIMESTAMP, with its fraction.
func appendZeroTime(dst []byte, frac, dec int) []byte {
	dst = append(dst, "0000-00-00 00:00:00"...)
	return appendFraction(dst, frac, dec)
}

// appendDate appends "YYYY-MM-DD" and appendClock "hh:mm:ss", as "%04d-%02d-%02d" and
// "%02d:%02d:%02d" print them.
func appendDate(dst []byte, year, month, day int) []byte {
	return appendTriple(dst, year, 4, month, day, '-')
}

func appendClock(dst []byte, hour, minute, second int) []byte {
	return appendTriple(dst, hour, 2, minute, second, ':')
}

// appendTriple appends a padded to width digits, then b and c padded to two, each after sep.
func appendTriple(dst []byte, a, width, b, c int, sep byte) []byte {
	dst = append(appendPadded(dst, a, width), sep)
	dst = append(appendPadded(dst, b, 2), sep)
	return appendPadded(dst, c, 2)
}

// appendFraction appends ".%06d" of frac cut to dec digits, as go-mysql formats it (a
// frac of more than six digits included: it cuts the text, not the number).
func appendFraction(dst []byte, frac, dec int) []byte {
	if dec == 0 {
		return dst
	}
	dst = append(dst, '.')
	dst = appendPadded(dst, frac, 6)
	return dst[:len(dst)-(6-dec)]
}

// Offsets of TIME2's integer part and of its whole value at six digits.
const (
	timeIntOffset  = 0x800000
	timeFullOffset = 0x800000000000
)

// appendTime2Text appends a TIME2 as decodeTime2 formats it.
func appendTime2Text(dst, b []byte, dec int) []byte {
	var intPart, frac, tmp int64
	switch dec {
	case 1, 2:
		intPart = int64(uintBE(b[:3])) - timeIntOffset
		frac = int64(b[3])
		if intPart < 0 && frac != 0 {
			intPart++ // negative values keep their fraction in reverse order
			frac -= 0x100
		}
		tmp = intPart<<24 + frac*10000
	case 3, 4:
		intPart = int64(uintBE(b[:3])) - timeIntOffset
		frac = int64(uintBE(b[3:5]))
		if intPart < 0 && frac != 0 {
			intPart++
			frac -= 0x10000
		}
		tmp = intPart<<24 + frac*100
	case 5, 6:
		return appendTimeValue(dst, int64(uintBE(b[:6]))-timeFullOffset, dec)
	default:
		intPart = int64(uintBE(b[:3])) - timeIntOffset
		tmp = intPart << 24
	}
	if intPart == 0 && frac == 0 {
		return append(dst, "00:00:00"...)
	}
	return appendTimeValue(dst, tmp, dec)
}

// appendTimeValue is go-mysql's timeFormat: sign, hours, minutes, seconds, and the
// fraction only when there is one.
func appendTimeValue(dst []byte, tmp int64, dec int) []byte {
	if tmp < 0 {
		tmp = -tmp
		dst = append(dst, '-')
	}
	hms := tmp >> 24
	dst = appendClock(dst, int((hms>>12)%(1<<10)), int((hms>>6)%(1<<6)), int(hms%(1<<6)))
	if secPart := tmp % (1 << 24); secPart != 0 {
		dst = append(dst, '.')
		dst = appendPadded(dst, int(secPart), 6)
		dst = dst[:len(dst)-(6-dec)]
	}
	return dst
}

// appendDecimalText appends a packed DECIMAL(prec, scale) as go-mysql's decodeDecimal
// writes it: nine digits per four bytes, fewer bytes for the leftover digits at either
// end, every byte inverted for a negative value and the top bit flipped for the sign.
func appendDecimalText(dst, b []byte, prec, scale int) ([]byte, error) {
	intg := prec - scale
	fullInt, fullFrac := intg/9, scale/9
	leftInt, leftFrac := intg%9, scale%9
	var buf [32]byte // DECIMAL(65, 30) packs into 30 bytes
	data := buf[:copy(buf[:], b)]
	var mask uint32
	if data[0]&0x80 == 0 {
		mask = math.MaxUint32
		dst = append(dst, '-')
	}
	data[0] ^= 0x80
	pos, v := decimalGroup(data, leftInt, mask)
	leading := v == 0
	if !leading {
		dst = strconv.AppendUint(dst, uint64(v), 10)
	}
	var err error
	for range fullInt {
		v = uint32(uintBE(data[pos:pos+4])) ^ mask
		pos += 4
		if leading {
			if v != 0 {
				leading = false
				dst = strconv.AppendUint(dst, uint64(v), 10)
			}
		} else if dst, err = appendNineDigits(dst, v); err != nil {
			return dst, err
		}
	}
	if leading {
		dst = append(dst, '0')
	}
	if pos >= len(data) {
		return dst, nil
	}
	dst = append(dst, '.')
	for range fullFrac {
		v = uint32(uintBE(data[pos:pos+4])) ^ mask
		pos += 4
		if dst, err = appendNineDigits(dst, v); err != nil {
			return dst, err
		}
	}
	if n, v := decimalGroup(data[pos:], leftFrac, mask); n > 0 {
		var digits [10]byte
		s := strconv.AppendUint(digits[:0], uint64(v), 10)
		if pad := leftFrac - len(s); pad > 0 {
			dst = append(dst, "00000000"[:pad]...)
		}
		dst = append(dst, s...)
	}
	return dst, nil
}

// decimalGroup reads the leading bytes that hold digits (< 9) decimal digits.
func decimalGroup(data []byte, digits int, mask uint32) (int, uint32) {
	n := decimalDigitBytes[digits]
	var v uint32
	for _, x := range data[:n] {
		v = v<<8 | uint32(x^uint8(mask))
	}
	return n, v
}

// appendNineDigits appends one full group of a decimal, zero-padded to nine digits; a
// group above 999,999,999 is not a decimal (go-mysql fails the event on it).
func appendNineDigits(dst []byte, v uint32) ([]byte, error) {
	if v > 999_999_999 {
		return dst, fmt.Errorf("decimal group %d has more than nine digits", v)
	}
	return appendPadded(dst, int(v), 9), nil
}
