package storetest

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/binlake/binlake/judge/store"
)

// records: WriteRecords puts, replaces and deletes records by kind and key, all or
// nothing, and Records reads back exactly the records of one kind, more than a page of
// them.
func (r *run) records(t *testing.T) {
	s, p := r.open(t)
	ctx := ctxFor(t)
	kind, other := p+"reservation", p+"interval"
	read := func(kind string) map[string]string {
		t.Helper()
		recs, err := s.Records(ctx, kind)
		if err != nil {
			t.Fatalf("records %s: %v", kind, err)
		}
		got := map[string]string{}
		for _, rec := range recs {
			if rec.Kind != kind {
				t.Fatalf("records %s: a record of kind %q", kind, rec.Kind)
			}
			if _, dup := got[rec.Key]; dup {
				t.Fatalf("records %s: key %q twice", kind, rec.Key)
			}
			got[rec.Key] = string(rec.Value)
		}
		return got
	}
	write := func(recs ...store.Record) {
		t.Helper()
		if err := s.WriteRecords(ctx, recs); err != nil {
			t.Fatalf("write records: %v", err)
		}
	}

	// More than a page of the Elasticsearch store's reads; values are bytes, not text.
	want := map[string]string{}
	var recs []store.Record
	for i := range 1500 {
		key, value := fmt.Sprintf("instance-%04d", i), fmt.Sprintf("\xff\x00%d", i)
		recs = append(recs, store.Record{Kind: kind, Key: key, Value: []byte(value)})
		want[key] = value
	}
	write(append(recs, store.Record{Kind: other, Key: "wave-1", Value: []byte("10")})...)
	if got := read(kind); !maps.Equal(got, want) {
		t.Fatalf("records: %d read, %d written, or values differ", len(got), len(want))
	}

	// Replaced, deleted, deleted without being there, added: in one call.
	write(
		store.Record{Kind: kind, Key: "instance-0001", Value: []byte("moved")},
		store.Record{Kind: kind, Key: "instance-0002"},
		store.Record{Kind: kind, Key: "never-written"},
		store.Record{Kind: kind, Key: "instance-9999", Value: []byte("new")},
	)
	want["instance-0001"] = "moved"
	delete(want, "instance-0002")
	want["instance-9999"] = "new"
	if got := read(kind); !maps.Equal(got, want) {
		t.Fatalf("records after replace and delete: %d read, want %d, or values differ", len(got), len(want))
	}
	if got := read(other); !maps.Equal(got, map[string]string{"wave-1": "10"}) {
		t.Fatalf("records of the other kind: %v", got)
	}
	if got := read(p + "none"); len(got) != 0 {
		t.Fatalf("records of a kind never written: %v", got)
	}

	// An invalid record refuses the whole call.
	for _, bad := range []store.Record{{Kind: kind, Value: []byte("x")}, {Kind: "a/b", Key: "k", Value: []byte("x")}} {
		err := s.WriteRecords(ctx, []store.Record{{Kind: kind, Key: "instance-0003"}, bad})
		if !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("write records with %+v: %v, want ErrInvalid", bad, err)
		}
	}
	if got := read(kind); got["instance-0003"] != want["instance-0003"] {
		t.Fatal("a refused call deleted a record")
	}
}
