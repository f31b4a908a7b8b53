package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/jsonenc"
)

// compactSeeds cover every production of the grammar and the ways to break each.
var compactSeeds = []string{
	`{}`, ` { "a" : [ 1 , -0.5e+10 , true , false , null , "x\"\\\/\b\f\n\r\t\u00e9" ] } `,
	`[]`, `[[[]]]`, `"plain"`, `0`, `-0`, `1E5`, `1e-5`, `12.50`, "\t\r\n[1]\n",
	`{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{1:2}`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`,
	`"\x"`, `"\u12"`, `"\u12G4"`, "\"a\tb\"", `"unterminated`, `tru`, `nul`, `[1]x`, `{} {}`,
	"\"\xff\xfe\"", `"<&>"`, "\"\u2028\"", `[-]`, `{"a":}`, `[`, `{`, `{"a"`, `"\`,
}

// FuzzAppendCompact: AppendCompact accepts exactly what encoding/json.Compact accepts
// and writes the same bytes.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range compactSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var want bytes.Buffer
		wantErr := json.Compact(&want, src)
		got, ok := jsonenc.AppendCompact([]byte("x"), src)
		if ok != (wantErr == nil) {
			t.Fatalf("AppendCompact(%q) ok = %v, encoding/json err = %v", src, ok, wantErr)
		}
		if !ok {
			if string(got) != "x" {
				t.Fatalf("AppendCompact(%q) failed but appended %q", src, got[1:])
			}
			return
		}
		if !bytes.Equal(got[1:], want.Bytes()) {
			t.Fatalf("AppendCompact(%q) = %q, encoding/json %q", src, got[1:], want.Bytes())
		}
	})
}

// TestAppendCompactDepth: nesting up to encoding/json's limit passes, one deeper fails,
// as it does there.
func TestAppendCompactDepth(t *testing.T) {
	for _, tc := range []struct {
		depth int
		ok    bool
	}{{10000, true}, {10001, false}} {
		src := []byte(strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth))
		_, ok := jsonenc.AppendCompact(nil, src)
		jsonErr := json.Compact(new(bytes.Buffer), src)
		if ok != tc.ok || (jsonErr == nil) != tc.ok {
			t.Errorf("depth %d: ok = %v, encoding/json err = %v, want ok %v", tc.depth, ok, jsonErr, tc.ok)
		}
	}
}

func BenchmarkAppendCompact(b *testing.B) {
	doc := []byte(`{"gift": true, "tags": ["a", "b", "c"], "note": "leave at the door, ring twice", "n": 12345, "dims": {"w": 10.5, "h": 3}}`)
	buf := make([]byte, 0, 256)
	b.Run("jsonenc", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			buf, _ = jsonenc.AppendCompact(buf[:0], doc)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		out := bytes.NewBuffer(buf)
		for b.Loop() {
			out.Reset()
			_ = json.Compact(out, doc)
		}
	})
}
