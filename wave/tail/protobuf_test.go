package tail_test

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/rowenc"
	"github.com/binlake/binlake/wave/rowenc/canalpb"
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

// TestCanalProtobufGroupPrintsEveryRow: canal-protobuf puts the rows of a rows event that
// go to one partition in one entry; -o line printed its first row alone (an outside
// trial's 7 rows came as 3 lines), and a grep for the others found nothing.
func TestCanalProtobufGroupPrintsEveryRow(t *testing.T) {
	row := func(id string) *canalpb.RowData {
		return &canalpb.RowData{AfterColumns: []*canalpb.Column{{Name: "id", Value: id, IsKey: true}, {Name: "v", Value: "x" + id}}}
	}
	insert := canalpb.EventType_INSERT
	rc, err := proto.Marshal(&canalpb.RowChange{EventTypePresent: &canalpb.RowChange_EventType{EventType: insert},
		RowDatas: []*canalpb.RowData{row("100"), row("103"), row("106")}})
	if err != nil {
		t.Fatal(err)
	}
	entry, err := proto.Marshal(&canalpb.Entry{EntryTypePresent: &canalpb.Entry_EntryType{EntryType: canalpb.EntryType_ROWDATA}, StoreValue: rc,
		Header: &canalpb.Header{SchemaName: "shop", TableName: "t", EventTypePresent: &canalpb.Header_EventType{EventType: insert},
			LogfileName: "binlog.000001", LogfileOffset: 4, ExecuteTime: 1_700_000_000_000}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := proto.Marshal(&canalpb.Messages{Messages: [][]byte{entry}})
	if err != nil {
		t.Fatal(err)
	}
	value, err := proto.Marshal(&canalpb.Packet{Type: canalpb.PacketType_MESSAGES, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p := &tail.Printer{W: &b, Mode: tail.Line, Format: tail.Auto}
	if _, err := p.Print(bus.Message{Topic: "t", Partition: 2, Offset: 9, Value: value}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("-o line printed %d lines, want 3 (one a row):\n%s", len(lines), b.String())
	}
	for i, id := range []string{"100", "103", "106"} {
		if !strings.HasPrefix(lines[i], "t 2:9 ") || !strings.Contains(lines[i], ` - insert shop.t {"id":"`+id+`"} {"id":"`+id+`","v":"x`+id+`"}`) {
			t.Errorf("line %d: %q, want row %s where its message is, the instance - (canal names none)", i+1, lines[i], id)
		}
	}
	checkPrinted(t, bus.Message{Topic: "t", Value: value})
}
