// Package jsonenc appends JSON strings to byte slices: the one string encoder behind the
// project's hand-written JSON (the wave's row messages, the metric batch codec, the
// judge's placement answers and the store's label keys), where encoding/json's
// reflection would cost more than the rest of the work.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// safe[html][c] is true for the ASCII bytes written as they are.
var safe = func() (t [2][utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		ok := c != '"' && c != '\\'
		t[0][c] = ok
		t[1][c] = ok && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD and U+2028/U+2029 escaped (they are valid
// JSON but end a JavaScript line), as encoding/json does. HTML characters (<, >, &) pass
// unchanged; see AppendStringHTML.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, 0) }

// AppendStringHTML is AppendString with <, > and & escaped too: byte for byte what
// encoding/json writes by default.
func AppendStringHTML(dst []byte, s string) []byte { return appendString(dst, s, 1) }

func appendString(dst []byte, s string, html int) []byte {
	ok := &safe[html]
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if ok[c] {
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
