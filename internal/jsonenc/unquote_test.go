package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendUnquoted pins escapes, surrogate pairs and what is not a JSON string.
func TestAppendUnquoted(t *testing.T) {
	for tok, want := range map[string]string{
		`""`:                      "",
		`"plain ü 😀"`:             "plain ü 😀",
		`"q\" b\\ \/ \n\t\r\b\f"`: "q\" b\\ / \n\t\r\b\f",
		`"\u0001\u00e9\u2028"`:    "\x01é\u2028",
		`"\ud83d\ude00"`:          "😀",
		`"\ud83d x"`:              "\ufffd x", // a lone surrogate
		`"\ude00"`:                "\ufffd",
	} {
		got, ok := AppendUnquoted([]byte("x"), []byte(tok))
		if !ok || string(got) != "x"+want {
			t.Errorf("AppendUnquoted(%s) = %q, %v; want %q", tok, got, ok, "x"+want)
		}
	}
	for _, tok := range []string{``, `"`, `x`, `"a`, `"a"b"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\nb\"", `"\"`, `null`} {
		if got, ok := AppendUnquoted([]byte("x"), []byte(tok)); ok || string(got) != "x" {
			t.Errorf("AppendUnquoted(%q) = %q, %v; want x, false", tok, got, ok)
		}
	}
}

// FuzzAppendUnquoted: AppendUnquoted reads back what AppendString writes, and decodes
// any token as encoding/json does (refusing what it refuses).
func FuzzAppendUnquoted(f *testing.F) {
	f.Add("plain", `"a\u00e9\ud83d\ude00"`)
	f.Add("q\"\\\n\x01\xff\u2028", `"\ud800\udc00"`)
	f.Fuzz(func(t *testing.T, s, tok string) {
		enc := AppendString(nil, s)
		got, ok := AppendUnquoted(nil, enc)
		var want string
		if err := json.Unmarshal(enc, &want); err != nil || !ok || string(got) != want {
			t.Fatalf("round trip of %q: %q, %v; encoding/json %q, %v", s, got, ok, want, err)
		}
		if strings.TrimSpace(tok) != tok {
			return // encoding/json allows space around the token; a token has none
		}
		got, ok = AppendUnquoted(nil, []byte(tok))
		err := json.Unmarshal([]byte(tok), &want)
		if len(tok) > 0 && tok[0] == '"' && (err == nil) != ok {
			t.Fatalf("%q: ok %v, encoding/json %v", tok, ok, err)
		}
		if ok && string(got) != want {
			t.Fatalf("%q: %q, encoding/json %q", tok, got, want)
		}
	})
}
