package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/bus"
)

// FuzzDecodeLine: any line decodes without a panic, a line that is not the sink's comes
// back whole, and a message the sink wrote comes back as it was published (its JSON
// object compacted, as the sink writes it; a value that is not JSON as its text, or as
// its bytes when it is not UTF-8).
func FuzzDecodeLine(f *testing.F) {
	f.Add("binlake.rows", []byte("shop.orders:[7]"), []byte(`{"instance":"orders","data":{"id":7}}`))
	f.Add("a", []byte(nil), []byte("plain text"))
	f.Add("t", []byte("k\n"), []byte(`{ "a" : [1, 2] }`))
	f.Add("t", []byte("k"), []byte(`"a JSON string"`))
	f.Add("t", []byte("k"), []byte("\x0a\x05shop\x80\xff"))
	f.Fuzz(func(t *testing.T, topic string, key, value []byte) {
		// As a line of its own: whatever the bytes, no panic; not the sink's: whole.
		raw := append(append([]byte(topic), key...), value...)
		if m, ok := decodeLine(raw); !ok && !bytes.Equal(m.Value, raw) {
			t.Fatalf("decodeLine(%q) not a sink line, but value %q", raw, m.Value)
		}

		var buf bytes.Buffer
		if err := New(&buf).Publish(context.Background(), bus.Message{Topic: topic, Key: key, Value: value}); err != nil {
			if topic == "" {
				return
			}
			t.Fatalf("publish: %v", err)
		}
		line := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
		if bytes.IndexByte(line, '\n') >= 0 {
			t.Fatalf("the sink wrote more than one line: %q", buf.Bytes())
		}
		m, ok := decodeLine(line)
		if !ok {
			t.Fatalf("the sink's line %q does not decode", line)
		}
		if m.Topic != topic && utf8.ValidString(topic) {
			t.Fatalf("topic %q, want %q", m.Topic, topic)
		}
		if utf8.Valid(key) && !bytes.Equal(m.Key, key) && !(len(key) == 0 && len(m.Key) == 0) {
			t.Fatalf("key %q, want %q", m.Key, key)
		}
		want := value
		switch {
		case json.Valid(value) && bytes.HasPrefix(bytes.TrimSpace(value), []byte("{")):
			var c bytes.Buffer
			_ = json.Compact(&c, value)
			want = c.Bytes()
			// json.Marshal writes a RawMessage's strings with HTML and U+2028 escaped:
			// the same JSON, not the same bytes.
			var a, b any
			if json.Unmarshal(m.Value, &a) != nil || json.Unmarshal(want, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("value %q, want %q", m.Value, want)
			}
			return
		case !json.Valid(value):
		default:
			return // a JSON non-object (read as its text)
		}
		if !bytes.Equal(m.Value, want) {
			t.Fatalf("value %q, want %q", m.Value, want)
		}
	})
}
