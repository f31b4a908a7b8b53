package metric

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/jsonenc"
)

// marshalKey is the reference LabelKey: what encoding/json makes of the map.
func marshalKey(t testing.TB, labels map[string]string) string {
	t.Helper()
	if len(labels) == 0 {
		return ""
	}
	b, err := json.Marshal(labels)
	if err != nil {
		t.Fatalf("marshal %q: %v", labels, err)
	}
	return string(b)
}

func TestLabelSetKeyMatchesEncodingJSON(t *testing.T) {
	many := map[string]string{}
	for i := range MaxLabels + 3 {
		many[fmt.Sprintf("k%02d", (i*7)%(MaxLabels+3))] = fmt.Sprint(i)
	}
	for _, labels := range []map[string]string{
		nil,
		{},
		{"instance": "orders"},
		{"b": "2", "a": "1", "c": "3"},
		{"q": `"quoted" \ back\slash`, "html": "<a href='x'>&amp;</a>"},
		{"ctl": "\x00\x01\b\f\n\r\t\x1f\x7f", "sep": "a\u2028b\u2029c", "bad": "\xff\xfe ok \xc3"},
		{"uni": "héllo wörld ✓ 𝄞"},
		many,
	} {
		if got, want := LabelSetKey(labels), marshalKey(t, labels); got != want {
			t.Errorf("LabelSetKey(%q) = %q, want %q", labels, got, want)
		}
	}
}

// FuzzLabelKey checks the hand-built key against encoding/json for arbitrary keys and
// values, valid UTF-8 or not.
func FuzzLabelKey(f *testing.F) {
	f.Add("instance", "orders", "", "")
	f.Add("a", "<&>", "b", "\u2028\x00\"\\")
	f.Add("\xff", "x", "k", "\xc3(")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		labels := map[string]string{k1: v1}
		if k2 != "" {
			labels[k2] = v2
		}
		if got, want := LabelSetKey(labels), marshalKey(t, labels); got != want {
			t.Fatalf("LabelSetKey(%q) = %q, want %q", labels, got, want)
		}
		b, err := json.Marshal(k1)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonenc.AppendStringHTML([]byte("x"), k1); string(got) != "x"+string(b) {
			t.Fatalf("jsonenc.AppendStringHTML(%q) = %q, want %q", k1, got[1:], b)
		}
	})
}

// TestLabelSetKeysAsLabelKey: the memo answers LabelKey for shared maps, for equal maps
// that are distinct, and for none.
func TestLabelSetKeysAsLabelKey(t *testing.T) {
	shared := map[string]string{"instance": "orders", "db": "shop"}
	sets := []map[string]string{nil, {}, shared, {"instance": "orders"}, shared, {"db": "shop", "instance": "orders"}, {"instance": "billing"}, shared}
	var lk LabelSetKeys
	for i, m := range sets {
		if got, want := lk.Of(m), LabelSetKey(m); got != want {
			t.Fatalf("set %d %v: %q, want %q", i, m, got, want)
		}
	}
	if len(lk.keys) != 4 { // shared once, and the three other non-empty maps
		t.Fatalf("memo holds %d maps, want 4", len(lk.keys))
	}
}

// ParseLabelSetKey gives back the labels of every key LabelSetKey makes, nil for none,
// and an error naming a key that is not one.
func TestParseLabelSetKey(t *testing.T) {
	for _, labels := range []map[string]string{nil, {"instance": "orders"}, {"instance": "a\"b", "source": "<db-1>", "z": ""}} {
		got, err := ParseLabelSetKey(LabelSetKey(labels))
		if err != nil || !reflect.DeepEqual(got, labels) {
			t.Errorf("ParseLabelSetKey(LabelSetKey(%v)) = %v, %v", labels, got, err)
		}
	}
	if _, err := ParseLabelSetKey(`{"instance":`); err == nil || !strings.Contains(err.Error(), `{\"instance\":`) {
		t.Errorf("a broken key: %v, want an error naming it", err)
	}
}
