package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/sqlite"
)

func scanAll(t *testing.T, scan func(context.Context, time.Time, time.Time, func([]store.Point) error) error, from, to time.Time) []store.Point {
	t.Helper()
	var out []store.Point
	err := scan(context.Background(), from, to, func(pts []store.Point) error {
		out = append(out, pts...)
		return nil
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

// A Reader beside the writing store sees what the store's own Scan sees, chunks and
// recent points alike, and the points written after it opened; it lists the names.
func TestReaderBesideTheWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.db")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := base.Add(20 * time.Minute)
	s, err := sqlite.Open(sqlite.Options{Path: path, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var pts []store.Point
	for i := range 120 { // 20 minutes at 10 s: the older buckets are packed into chunks
		ts := base.Add(time.Duration(i) * 10 * time.Second)
		pts = append(pts,
			store.Point{Node: "w1", Name: "cpu.util", TS: ts, Value: float64(i)},
			store.Point{Node: "w1", Name: "wave.lag_s", Labels: map[string]string{"instance": "orders"}, TS: ts, Value: 1})
	}
	if err := s.Write(ctx, pts); err != nil {
		t.Fatal(err)
	}
	r, err := sqlite.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	from, to := base, base.Add(time.Hour)
	want := scanAll(t, s.Scan, from, to)
	if len(want) != 240 {
		t.Fatalf("the store's own scan: %d points, want 240", len(want))
	}
	if got := scanAll(t, r.Scan, from, to); !reflect.DeepEqual(got, want) {
		t.Fatalf("reader: %d points, store: %d; first %v vs %v", len(got), len(want), got[:1], want[:1])
	}
	late := store.Point{Node: "w2", Name: "mem.used_pct", TS: base.Add(20 * time.Minute), Value: 42}
	if err := s.Write(ctx, []store.Point{late}); err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, r.Scan, from, to)
	if len(got) != 241 || !reflect.DeepEqual(got[240], late) {
		t.Fatalf("after a write: %d points, last %v; want 241, last %v", len(got), got[len(got)-1], late)
	}
	names, err := r.Names(ctx)
	if err != nil || !reflect.DeepEqual(names, []string{"cpu.util", "mem.used_pct", "wave.lag_s"}) {
		t.Fatalf("reader names %v (%v)", names, err)
	}
	names, err = s.Names(ctx)
	if err != nil || !reflect.DeepEqual(names, []string{"cpu.util", "mem.used_pct", "wave.lag_s"}) {
		t.Fatalf("store names %v (%v)", names, err)
	}
}

// A Reader opens only a store: not a missing file, another SQLite file, or a file of
// another schema version, which it must not convert; and it changes nothing.
func TestOpenReaderErrors(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", "file:"+other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "v1.db")
	db1, err := sql.Open("sqlite", "file:"+old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db1.Exec(`CREATE TABLE points (x); PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db1.Close()
	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "none.db"), "none.db: no such file or directory"},
		{"query", filepath.Join(dir, "a.db?mode=ro"), "must be a file path"},
		{"not a store", other, "other.db is not a judge store (no schema)"},
		{"version 1", old, "v1.db has schema version 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := sqlite.OpenReader(tc.path)
			if err == nil {
				r.Close()
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Fatalf("the reader created the missing file: %v", err)
	}
}
