package capture

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

// TestSourceProblems: each setting that stops an instance is named with its value, the
// reason the instance would stop with and the fix; a source set as the wave needs has
// none; a server_id is checked against the source's own and its replicas'.
func TestSourceProblems(t *testing.T) {
	good := SourceSettings{LogBin: "ON", Format: "ROW", RowImage: "FULL", ServerID: 1,
		Replicas: []RegisteredReplica{{ServerID: 2, Host: "replica-1", Port: 3306}}}
	for _, tc := range []struct {
		name     string
		edit     func(*SourceSettings)
		serverID uint32
		want     []string // one substring for each problem, in order
	}{
		{"as needed", func(*SourceSettings) {}, 1001, nil},
		{"binlog off", func(s *SourceSettings) { s.LogBin = "OFF" }, 1001, []string{"log_bin is OFF"}},
		{"mixed", func(s *SourceSettings) { s.Format = "MIXED" }, 1001, []string{"binlog_format is MIXED: a data change the source logs as a statement stops the instance (reason statement_dml"}},
		{"statement", func(s *SourceSettings) { s.Format = "STATEMENT" }, 1001, []string{"binlog_format is STATEMENT"}},
		{"minimal", func(s *SourceSettings) { s.RowImage = "MINIMAL" }, 1001, []string{"binlog_row_image is MINIMAL: rows logged without every column stop the instance (reason row_image_partial"}},
		{"noblob", func(s *SourceSettings) { s.RowImage = "NOBLOB" }, 1001, []string{"binlog_row_image is NOBLOB"}},
		// MySQL before 5.6 has no binlog_row_image: its row events hold every column.
		{"no row image variable", func(s *SourceSettings) { s.RowImage = "" }, 1001, nil},
		{"the source's own id", func(*SourceSettings) {}, 1, []string{"server_id 1 is the source's own"}},
		{"a replica's id", func(*SourceSettings) {}, 2, []string{"server_id 2 is already used by a replica of the source (replica-1:3306): the two would end each other's binlog connection (reason server_id_clash)"}},
		{"all at once", func(s *SourceSettings) { s.LogBin, s.Format, s.RowImage = "OFF", "MIXED", "NOBLOB" }, 1,
			[]string{"log_bin is OFF", "server_id 1 is the source's own"}}, // no binlog: its format said once there is one
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.edit(&s)
			got := append(s.BinlogProblems(), s.ServerIDProblems(tc.serverID)...)
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems, want %d: %q", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d: %q, want it to hold %q", i, got[i], w)
				}
			}
		})
	}
}

// TestReadSourceSettings: the settings are read from a MySQL-protocol server as MySQL
// answers: the variables by name (one a version lacks stays empty), the replicas from
// SHOW REPLICAS where SHOW SLAVE HOSTS is gone (MySQL 8.4), by column name.
func TestReadSourceSettings(t *testing.T) {
	src := &fakeMySQL{serverID: 7,
		vars:           map[string]string{"log_bin": "ON", "binlog_format": "mixed", "server_id": "7"},
		replicasQuery:  "SHOW REPLICAS",
		replicaColumns: []string{"Server_Id", "Host", "Port", "Source_Id", "Replica_UUID"},
		replicas:       [][]any{{1001, "wave-a", 0, 7, "u1"}, {42, "db2", 3306, 7, "u2"}},
	}
	conn := src.connect(t)
	s, err := ReadSourceSettings(conn)
	if err != nil {
		t.Fatal(err)
	}
	if s.LogBin != "ON" || s.Format != "MIXED" || s.RowImage != "" || s.ServerID != 7 {
		t.Errorf("settings %+v, want log_bin ON, format MIXED, no row image, server_id 7", s)
	}
	reps, err := registeredReplicas(conn)
	if err != nil {
		t.Fatal(err)
	}
	want := []RegisteredReplica{{1001, "wave-a", 0}, {42, "db2", 3306}}
	if len(reps) != 2 || reps[0] != want[0] || reps[1] != want[1] {
		t.Errorf("replicas %+v, want %+v", reps, want)
	}
	s.Replicas = reps
	got := append(s.BinlogProblems(), s.ServerIDProblems(42)...)
	if len(got) != 2 || !strings.Contains(got[1], "(db2:3306)") {
		t.Errorf("problems %q: want binlog_format and the clash with db2:3306", got)
	}
}

// TestCaptureWarnsOfSourceSettings: a capture's connection logs each setting that would
// stop its instance, once for a server, and again for another server (a switch).
func TestCaptureWarnsOfSourceSettings(t *testing.T) {
	var log bytes.Buffer
	c := &Capture{Options: Options{Inst: &cluster.Instance{Source: cluster.Source{Flavor: cluster.FlavorMySQL}},
		Log: slog.New(slog.NewTextHandler(&log, nil))}}
	src := &fakeMySQL{serverID: 7, vars: map[string]string{"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "MINIMAL"}}
	conn := src.connect(t)
	c.warnSourceSettings(conn, binlogOwner{serverID: 7})
	c.warnSourceSettings(conn, binlogOwner{serverID: 7})
	if n := strings.Count(log.String(), "binlog_row_image is MINIMAL"); n != 1 {
		t.Fatalf("warned %d times for one server, want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "server=\"server_id 7\"") {
		t.Errorf("want a warning naming the server:\n%s", log.String())
	}
	c.warnSourceSettings(conn, binlogOwner{serverID: 8})
	if n := strings.Count(log.String(), "binlog_row_image is MINIMAL"); n != 2 {
		t.Errorf("warned %d times after a switch to another server, want twice:\n%s", n, log.String())
	}
}

// TestFlavorOf: a server is MariaDB when its version says so, MySQL otherwise.
func TestFlavorOf(t *testing.T) {
	for v, want := range map[string]string{"10.11.6-MariaDB-0+deb12u1-log": cluster.FlavorMariaDB, "5.5.5-10.6.12-MariaDB": cluster.FlavorMariaDB,
		"8.0.36": cluster.FlavorMySQL, "8.4.0-commercial": cluster.FlavorMySQL} {
		if got := FlavorOf(v); got != want {
			t.Errorf("FlavorOf(%q) = %s, want %s", v, got, want)
		}
	}
}

// TestServerErrorDropsTheDriversPrefix: a login refused reads as the server's error.
func TestServerErrorDropsTheDriversPrefix(t *testing.T) {
	refused := mysql.NewError(mysql.ER_ACCESS_DENIED_ERROR, "Access denied for user 'u'@'127.0.0.1' (using password: YES)")
	err := ServerError(fmt.Errorf("handleAuthResult: readAuthResult: %w", refused))
	if err.Error() != refused.Error() || !errors.Is(err, refused) {
		t.Errorf("%v, want %v", err, refused)
	}
	other := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	if ServerError(other) != other {
		t.Error("an error without the server's was changed")
	}
}
