package jsonenc

import (
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnquoted appends the text of the JSON string token tok (its quotes included) to
// dst, its escapes decoded: the inverse of AppendString, for encoders that build on
// another encoder's JSON (the Canal protobuf format on the canal-json rendering). A
// \u escape of a lone surrogate, and each byte that is not UTF-8, becomes U+FFFD, as
// encoding/json decodes them. ok is false,
// and dst unchanged, when tok is not a JSON string.
func AppendUnquoted(dst, tok []byte) (out []byte, ok bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return dst, false
	}
	body := tok[1 : len(tok)-1]
	start := len(dst)
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return dst[:start], false
		case c != '\\':
			j := i + 1
			for j < len(body) && body[j] != '\\' && body[j] != '"' && body[j] >= 0x20 {
				j++
			}
			dst = appendValid(dst, body[i:j])
			i = j
			continue
		}
		if i+1 >= len(body) {
			return dst[:start], false
		}
		if b, ok := Unescape(body[i+1]); ok {
			dst = append(dst, b)
			i += 2
			continue
		}
		if body[i+1] != 'u' {
			return dst[:start], false
		}
		r, ok := Hex4(body[i+2:])
		if !ok {
			return dst[:start], false
		}
		i += 6
		if utf16.IsSurrogate(r) {
			if len(body) >= i+6 && body[i] == '\\' && body[i+1] == 'u' {
				if r2, ok := Hex4(body[i+2:]); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						i += 6
						dst = utf8.AppendRune(dst, dec)
						continue
					}
				}
			}
			r = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst, true
}

// Unescape is the byte a one-letter JSON escape (the letter after the backslash) stands
// for; false for \u, which takes four hex digits (Hex4), and for any other letter.
func Unescape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// appendValid appends b with each byte that is not part of valid UTF-8 as U+FFFD, as
// encoding/json decodes a string.
func appendValid(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return dst
}

// Hex4 reads the four hex digits of a \u escape at the start of b; false when b does
// not start with four.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
