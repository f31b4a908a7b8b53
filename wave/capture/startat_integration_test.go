package capture

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestPositionAtIntegration: on the test MariaDB, the start for a time is the beginning
// of a binlog file the server opened at least StartSkew before it (the newest one for a
// time well after every file's opening), and a time before the oldest file the server
// still has is a purged binlog, fatal, not a later start.
func TestPositionAtIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	src := cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, conn := testenv.ScratchDatabase(t, "startat")
	files, err := binlogFiles(conn)
	if err != nil {
		t.Fatal(err)
	}

	later := time.Now().Add(2 * StartSkew)
	p, err := PositionAt(ctx, src, a.Password, later, nil)
	if err != nil {
		t.Fatal(err)
	}
	if newest := files[len(files)-1]; p.File != newest || p.Pos != 4 || p.GTIDSet != "" {
		t.Fatalf("start for %s = %s, want %s:4 (the file being written)", later, p, newest)
	}

	now := time.Now()
	p, err = PositionAt(ctx, src, a.Password, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := fileOpened(ctx, src, a.Password, p.File, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Pos != 4 || opened.After(now.Add(-StartSkew)) {
		t.Fatalf("start for now = %s, opened %s: want the start of a file opened at least %s ago", p, opened, StartSkew)
	}

	oldest, err := fileOpened(ctx, src, a.Password, files[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = PositionAt(ctx, src, a.Password, oldest.Add(-time.Hour), nil)
	if !IsFatal(err) || !strings.Contains(err.Error(), "error 1236") || !strings.Contains(err.Error(), files[0]) {
		t.Fatalf("start for a time before the oldest file: %v, want a fatal purged binlog naming %s", err, files[0])
	}
}
