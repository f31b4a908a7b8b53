package tail_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/tail"
)

// TestPeerFormats: every message of the formats' golden files (wave/rowenc/testdata/formats:
// a row of every column type inserted, updated, deleted and snapshotted, and a DDL, in each
// format) is detected as its own format, says its type, table and row, and prints.
func TestPeerFormats(t *testing.T) {
	files, err := filepath.Glob("../rowenc/testdata/formats/*.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	n := 0
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".golden")
		format := "json"
		for _, p := range []string{"canal-json", "maxwell-json", "debezium-json"} {
			if strings.HasPrefix(base, p) {
				format = p
			}
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			typ, value, _ := strings.Cut(sc.Text(), "\t")
			if value == "(none)" {
				continue
			}
			d := tail.Decode([]byte(value), tail.Auto)
			want := typ
			if typ == "snapshot" && (format == "canal-json" || base == "maxwell-json-snapshot-insert") {
				want = "insert" // Canal has no snapshot; Maxwell's insert for Flink
			}
			if d.Format != format || d.Row.Type != want || d.Row.Database != "shop" || d.Row.Table != "every_type" {
				t.Errorf("%s %s: decoded as %q type %q table %s.%s (%v)", base, typ, d.Format, d.Row.Type, d.Row.Database, d.Row.Table, d.Err)
			}
			if typ == "update" && (len(d.Row.Old) < 3 || !strings.Contains(string(d.Row.Old), `"i8"`)) {
				t.Errorf("%s update: old %s", base, d.Row.Old)
			}
			if strict := tail.Decode([]byte(value), format); strict.Format != format {
				t.Errorf("%s %s: -format %s refused it: %v", base, typ, format, strict.Err)
			}
			checkPrinted(t, bus.Message{Topic: "golden", Key: []byte("shop.every_type"), Value: []byte(value)})
			n++
		}
		fh.Close()
	}
	t.Logf("%d messages of %d golden files decode as their format and print", n, len(files))
}
