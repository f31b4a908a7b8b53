package rowenc

import (
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// Charset turns the bytes of a text column whose character set is not UTF-8 into UTF-8.
// The binlog carries a column's text in the column's own character set (a latin1 "café"
// is the bytes 63 61 66 e9); written as it was, every byte past ASCII became U+FFFD,
// where a snapshot (which the server converts for the connection) and Canal and
// Debezium (which decode with the column's charset) give "café".
type Charset struct {
	Name  string
	table *[256]rune        // a single-byte set: each byte's character
	enc   encoding.Encoding // a multi-byte one
}

// Decode appends src, text in c, to dst as UTF-8. A sequence c cannot decode becomes
// U+FFFD, as invalid UTF-8 does elsewhere.
func (c *Charset) Decode(dst, src []byte) []byte {
	if c.table != nil {
		for _, b := range src {
			if b < 0x80 {
				dst = append(dst, b)
			} else {
				dst = utf8.AppendRune(dst, c.table[b])
			}
		}
		return dst
	}
	out, err := c.enc.NewDecoder().Bytes(src)
	if err != nil {
		return append(dst, strings.ToValidUTF8(string(src), "\uFFFD")...)
	}
	return append(dst, out...)
}

// CharsetOfCollation is the Charset of the collation with MySQL's id coll (the binlog's
// column metadata), or nil when its text is UTF-8 already (utf8mb4, utf8mb3, ascii), it
// is binary, or it is not known here (then its bytes are written as they are).
func CharsetOfCollation(coll uint64) *Charset {
	if coll == BinaryCollation {
		return nil
	}
	c, err := charset.GetCollationByID(int(coll))
	if err != nil {
		return nil
	}
	return CharsetNamed(c.CharsetName)
}

// CharsetNamed is the Charset of MySQL's character set name (information_schema's
// CHARACTER_SET_NAME), nil as CharsetOfCollation says.
func CharsetNamed(name string) *Charset {
	name = strings.ToLower(name)
	return charsets[name]
}

// charsets are MySQL's and MariaDB's character sets that are not UTF-8, by name, with
// their decoders. MySQL's latin1 is Windows-1252 with its five unassigned bytes (0x81,
// 0x8D, 0x8F, 0x90, 0x9D) as the C1 controls of the same number, as the server converts
// them; x/text leaves those undefined.
var charsets = func() map[string]*Charset {
	single := map[string]*charmap.Charmap{
		"latin1": charmap.Windows1252, "latin2": charmap.ISO8859_2, "latin5": charmap.ISO8859_9,
		"latin7": charmap.ISO8859_13, "greek": charmap.ISO8859_7, "hebrew": charmap.ISO8859_8,
		"cp1250": charmap.Windows1250, "cp1251": charmap.Windows1251, "cp1256": charmap.Windows1256,
		"cp1257": charmap.Windows1257, "koi8r": charmap.KOI8R, "koi8u": charmap.KOI8U,
		"cp850": charmap.CodePage850, "cp852": charmap.CodePage852, "cp866": charmap.CodePage866,
		"macroman": charmap.Macintosh,
	}
	multi := map[string]encoding.Encoding{
		"gbk": simplifiedchinese.GBK, "gb2312": simplifiedchinese.GBK, "gb18030": simplifiedchinese.GB18030,
		"big5": traditionalchinese.Big5, "sjis": japanese.ShiftJIS, "cp932": japanese.ShiftJIS,
		"ujis": japanese.EUCJP, "eucjpms": japanese.EUCJP, "euckr": korean.EUCKR,
		"ucs2": unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), "utf16": unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
		"utf16le": unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), "utf32": utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM),
	}
	out := make(map[string]*Charset, len(single)+len(multi))
	for name, cm := range single {
		var t [256]rune
		for b := range 256 {
			t[b] = cm.DecodeByte(byte(b))
		}
		if name == "latin1" {
			for _, b := range []byte{0x81, 0x8d, 0x8f, 0x90, 0x9d} {
				t[b] = rune(b)
			}
		}
		out[name] = &Charset{Name: name, table: &t}
	}
	for name, enc := range multi {
		out[name] = &Charset{Name: name, enc: enc}
	}
	return out
}()
