package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/binlake/binlake/internal/jsonenc"
)

func marshal(t *testing.T, s string, html bool) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// FuzzAppendString: both forms write exactly what encoding/json writes, whatever the
// bytes (invalid UTF-8, control characters, HTML, line separators).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "wave-1", `a"b\c`, "tab\tnl\n\x00\x1f\b\f", "\xff\xfe", "\u2028\u2029", "日本語", "<&>", "\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := jsonenc.AppendString([]byte("x"), s)[1:], marshal(t, s, false); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
		if got, want := jsonenc.AppendStringHTML(nil, s), marshal(t, s, true); !bytes.Equal(got, want) {
			t.Fatalf("AppendStringHTML(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	s := "an ordinary column value, with \"quotes\" and a tab\there"
	buf := make([]byte, 0, 128)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = jsonenc.AppendString(buf[:0], s)
	}
}
