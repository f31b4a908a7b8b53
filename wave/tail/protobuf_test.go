package tail_test

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/rowenc"
	"github.com/binlake/binlake/wave/tail"
)

// TestProtobufFormats: every message of the protobuf formats' golden files
// (wave/rowenc/testdata/protobuf.golden and canal-protobuf.golden, hex) is detected as
// its own format, says its type, table and row, and prints; the JSON formats' messages
// are not taken for protobuf ones (TestPeerFormats).
func TestProtobufFormats(t *testing.T) {
	for _, format := range []string{rowenc.FormatProtobuf, rowenc.FormatCanalProtobuf} {
		fh, err := os.Open("../rowenc/testdata/" + format + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			name, h, _ := strings.Cut(sc.Text(), "\t")
			value, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Fields(name)[0] // "insert zero values" is an insert
			if want == "snapshot" && format == rowenc.FormatCanalProtobuf {
				want = "insert" // Canal has no snapshot
			}
			d := tail.Decode(value, tail.Auto)
			if d.Format != format || d.Row.Type != want || d.Row.Table != "kinds" || d.Row.Database != "shop" {
				t.Errorf("%s %s: decoded as %q type %q table %s.%s (%v)", format, name, d.Format, d.Row.Type, d.Row.Database, d.Row.Table, d.Err)
			}
			if want != "ddl" && !strings.Contains(string(d.Row.Data), `"id":`) {
				t.Errorf("%s %s: data %s", format, name, d.Row.Data)
			}
			if name == "update" && !strings.Contains(string(d.Row.Old), `"k2":`) {
				t.Errorf("%s update: old %s, want the changed key column k2", format, d.Row.Old)
			}
			checkPrinted(t, bus.Message{Topic: "golden", Key: []byte("shop.kinds"), Value: value})
			n++
		}
		fh.Close()
		if n < 8 {
			t.Errorf("%s: %d golden messages", format, n)
		}
	}
	// Not every byte string parses as protobuf's wire format, and none of these is a row.
	for _, v := range []string{`{"a":1}`, "\x08\x01", "\x0a\x03abc", ""} {
		if d := tail.Decode([]byte(v), tail.Auto); d.Format != "" {
			t.Errorf("%q decoded as %s", v, d.Format)
		}
	}
}
