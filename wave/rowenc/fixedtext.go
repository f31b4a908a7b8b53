package rowenc

import (
	"encoding/hex"
	"net/netip"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/jsonenc"
)

// FixedText is a MariaDB type that stores a fixed number of bytes and shows them as text:
// its binlog value is the bytes (a BINARY to the table map), a SELECT's the text.
type FixedText uint8

// The MariaDB types read as FixedText.
const (
	FixedNone  FixedText = iota
	FixedUUID            // UUID: 16 bytes, shown 8-4-4-4-12 hex digits
	FixedINET4           // INET4: 4 bytes, shown dotted
	FixedINET6           // INET6: 16 bytes, shown as IPv6 text (::ffff:1.2.3.4 for a mapped IPv4)
)

// FixedTextNamed is the FixedText of a schema's DATA_TYPE; FixedNone for any other.
func FixedTextNamed(dataType string) FixedText {
	switch dataType {
	case "uuid":
		return FixedUUID
	case "inet4":
		return FixedINET4
	case "inet6":
		return FixedINET6
	}
	return FixedNone
}

// Size is the number of bytes a value of f holds.
func (f FixedText) Size() int {
	if f == FixedINET4 {
		return 4
	}
	return 16
}

// String is the type's SQL name.
func (f FixedText) String() string {
	return [...]string{"", "uuid", "inet4", "inet6"}[min(int(f), 3)]
}

// appendFixedText appends b, a value of type f, as the JSON string of its text: the
// binlog's bytes are made text, a snapshot's value (a SELECT's, already its text) is
// kept; bytes of another length that are not text as base64.
func appendFixedText(dst []byte, f FixedText, b []byte) []byte {
	if len(b) != f.Size() {
		if utf8.Valid(b) {
			return jsonenc.AppendString(dst, string(b))
		}
		return appendBase64(dst, b)
	}
	switch f {
	case FixedUUID:
		var s [36]byte
		hex.Encode(s[0:8], b[0:4])
		hex.Encode(s[9:13], b[4:6])
		hex.Encode(s[14:18], b[6:8])
		hex.Encode(s[19:23], b[8:10])
		hex.Encode(s[24:36], b[10:16])
		s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
		return append(append(append(dst, '"'), s[:]...), '"')
	case FixedINET4:
		return jsonenc.AppendString(dst, netip.AddrFrom4([4]byte(b)).String())
	}
	if b[12]|b[13] != 0 && isZero(b[:12]) {
		// An IPv4-compatible address: MariaDB shows ::1.2.3.4 (as inet_ntop), netip
		// ::102:304. A mapped one both show as ::ffff:1.2.3.4.
		return jsonenc.AppendString(dst, "::"+netip.AddrFrom4([4]byte(b[12:])).String())
	}
	return jsonenc.AppendString(dst, netip.AddrFrom16([16]byte(b)).String())
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
