package store

import (
	"slices"
	"unicode/utf8"
)

// LabelKey is the canonical encoding of a label set that both stores index, so that
// "exactly these labels" is one equality test: "" for nil or empty labels, otherwise the
// JSON object with sorted keys (unambiguous whatever the keys and values contain).
//
// The bytes are exactly what encoding/json.Marshal produces for the map, which is how
// they were computed before and how existing SQLite files and Elasticsearch documents
// hold them; it is built by hand because the ingest path computes one per point and
// reflection cost a fifth of the SQLite store's time.
func LabelKey(labels map[string]string) string {
	switch len(labels) {
	case 0:
		return ""
	case 1:
		for k, v := range labels {
			b := make([]byte, 0, len(k)+len(v)+7)
			b = append(b, '{')
			b = AppendJSONString(b, k)
			b = append(b, ':')
			b = AppendJSONString(b, v)
			return string(append(b, '}'))
		}
	}
	var arr [MaxLabels]string
	keys := arr[:0]
	size := 2
	for k, v := range labels {
		keys = append(keys, k)
		size += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		b = AppendJSONString(b, labels[k])
	}
	return string(append(b, '}'))
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string exactly as encoding/json writes it: with
// <, > and & escaped, invalid UTF-8 replaced by U+FFFD, and U+2028 and U+2029 escaped.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
