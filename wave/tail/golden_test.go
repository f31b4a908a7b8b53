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

// TestGoldenMessages: every message of the wave's golden files (wave/capture/testdata/golden: a
// real MariaDB's insert, update and delete of each column type, as the wave encodes them)
// decodes as a row message, and prints in each mode as whole lines of printable text.
func TestGoldenMessages(t *testing.T) {
	files, err := filepath.Glob("../capture/testdata/golden/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	// The golden files mask what changes from run to run: put numbers back.
	unmask := strings.NewReplacer(`"ts":"TS"`, `"ts":1764424800`, `"pos":"POS"`, `"pos":4`, `"xid":"XID"`, `"xid":7`,
		`"gtid":"GTID"`, `"gtid":"0-1-2"`, `"file":"FILE"`, `"file":"bin.000001"`)
	n := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		var key string
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "key "); ok {
				key = k
				continue
			}
			value := unmask.Replace(line)
			d := tail.Decode([]byte(value), tail.Auto)
			if d.Format != "json" || d.Row.Commit != true || d.Row.XID != 7 {
				t.Errorf("%s: %s: decoded as %q (%v), commit %v", filepath.Base(f), value, d.Format, d.Err, d.Row.Commit)
			}
			checkPrinted(t, bus.Message{Topic: "golden", Key: []byte(key), Value: []byte(value)})
			n++
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n < len(files)*3 {
		t.Fatalf("%d messages in %d files: want an insert, an update and a delete each", n, len(files))
	}
	t.Logf("%d golden messages of %d column types decode and print", n, len(files))
}
