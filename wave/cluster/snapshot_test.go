package cluster

import "testing"

func TestSnapshotOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o  SnapshotOptions
		ok bool
	}{
		{SnapshotOptions{}, true},
		{SnapshotOptions{Initial: true, ChunkRows: 1, RowsPerSecond: 1}, true},
		{SnapshotOptions{ChunkRows: maxSnapshotChunkRows + 1}, false},
		{SnapshotOptions{ChunkRows: -1}, false},
		{SnapshotOptions{RowsPerSecond: -1}, false},
	} {
		if err := tc.o.validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.o, err, tc.ok)
		}
	}
}

func TestSnapshotProgressSteps(t *testing.T) {
	p := &SnapshotProgress{Request: "r", Tables: []string{"d.a", "d.b"}, Rows: 10}
	one := int64(5)
	a := p.AfterChunk([]KeyValue{{Int: &one}}, 3)
	if a.Rows != 13 || a.TableRows != 3 || len(a.After) != 1 || len(p.After) != 0 {
		t.Fatalf("after: %+v (from %+v, which must not change)", a, p)
	}
	b := a.Next(2)
	if b.Rows != 15 || b.TableRows != 0 || b.After != nil || len(b.Tables) != 1 || b.Tables[0] != "d.b" || b.Done {
		t.Fatalf("next: %+v (the next table's rows start at 0)", b)
	}
	// The table's own count, not the snapshot's, for its log line: d.b's 4 rows.
	if c := b.AfterChunk(nil, 4); c.TableRows != 4 || c.Rows != 19 {
		t.Fatalf("d.b's chunk: %+v, want 4 rows of the table, 19 of the snapshot", c)
	}
	if c := b.Next(0); !c.Done || len(c.Tables) != 0 {
		t.Fatalf("last next: %+v", c)
	}
}
