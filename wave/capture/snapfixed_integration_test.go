package capture

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/rowenc"
)

// TestSnapshotFixedTextIntegration: a snapshot reads a MariaDB UUID, INET6 or INET4
// column's text as a SELECT gives it, sends it as that text as the binlog's rows now
// are, and knows its type (canal's mysqlType said char for a snapshot's row where the
// binlog's said uuid).
func TestSnapshotFixedTextIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, _ := tableAt(t, ctx, a, "wave_snapfixed", "(id INT PRIMARY KEY, u UUID, i6 INET6, i4 INET4)")
	exec("INSERT INTO " + db + ".t VALUES (1, '123e4567-e89b-12d3-a456-426655440000', '::ffff:10.0.0.1', '10.0.0.0')")
	s := snapshotSource{ep: Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}}
	defer s.close()
	sc := newSchema(Endpoint{Addr: a.Addr, User: a.User, Password: a.Password}, slog.New(slog.DiscardHandler))
	defer sc.close()
	tb, err := s.table(ctx, sc, db, "t")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.chunk(ctx, tb, nil, 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("chunk: %d rows, %v", len(rows), err)
	}
	canal, err := rowenc.NewFormat(rowenc.FormatCanalJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := &rowenc.Event{Table: tb, Type: rowenc.TypeSnapshot, Meta: rowenc.Meta{Instance: "snapfixed"}, Rows: rowenc.QueryRows(rows)}
	msgs, err := new(rowenc.Encoder).Encode(ev, []rowenc.Target{{By: rowenc.PartitionPK}, {By: rowenc.PartitionPK, Format: canal}}, true, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"u":"123e4567-e89b-12d3-a456-426655440000"`, `"i6":"::ffff:10.0.0.1"`, `"i4":"10.0.0.0"`} {
		if !strings.Contains(string(msgs[0].Value), want) || !strings.Contains(string(msgs[1].Value), want) {
			t.Errorf("snapshot messages\n%s\n%s\nwant %s in both", msgs[0].Value, msgs[1].Value, want)
		}
	}
	if !strings.Contains(string(msgs[1].Value), `"u":"uuid","i6":"inet6","i4":"inet4"`) {
		t.Errorf("canal-json mysqlType of the snapshot's row: %s", msgs[1].Value)
	}
}
