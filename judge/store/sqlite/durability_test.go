package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/binlake/binlake/judge/store"
)

// TestWritesAreDurable checks that every connection of an opened store, the writer's
// and the readers', runs in WAL mode with synchronous=FULL (2): a Write's commit syncs
// the WAL before it returns, so that what the judge acknowledges to Kafka survives a
// power loss. With NORMAL (1) in WAL mode a commit reaches the disk only at the next
// checkpoint.
func TestWritesAreDurable(t *testing.T) {
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "metrics.db")})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	pt := store.Point{Node: "n1", Name: "cpu.util", TS: time.Now().Add(-time.Minute), Value: 1}
	if err := s.Write(ctx, []store.Point{pt}); err != nil {
		t.Fatalf("write: %v", err)
	}
	for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r} {
		// A pinned connection of the pool: PRAGMA synchronous is per connection.
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("%s: connection: %v", name, err)
		}
		var sync int
		var mode string
		if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			t.Fatalf("%s: PRAGMA synchronous: %v", name, err)
		}
		if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatalf("%s: PRAGMA journal_mode: %v", name, err)
		}
		conn.Close()
		if sync != 2 || mode != "wal" {
			t.Errorf("%s connection: synchronous=%d journal_mode=%s, want 2 (FULL) and wal", name, sync, mode)
		}
	}
}
