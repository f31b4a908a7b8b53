package capture

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

// TestPositionNowGTIDSetNotAheadOfThePosition: a transaction commits right after SHOW
// MASTER STATUS answers. The GTID set of the first start must not hold it: the capture
// resumes by GTID, and a transaction in the set is never sent, although it lies after
// the position. On MySQL the set is the Executed_Gtid_Set of the same SHOW MASTER STATUS
// (which the server reads before the position); on MariaDB gtid_binlog_pos read before it.
// The real MariaDB cannot be made to commit between two queries of another connection at
// a chosen moment, so both flavors are asked of the fake server here.
func TestPositionNowGTIDSetNotAheadOfThePosition(t *testing.T) {
	for _, tc := range []struct {
		flavor        string
		before, after string
	}{
		{cluster.FlavorMySQL, uuidA + ":1-12", uuidA + ":1-13"},
		{cluster.FlavorMariaDB, "0-7-12", "0-7-13"},
	} {
		t.Run(tc.flavor, func(t *testing.T) {
			src := fakeMySQLSource()
			src.mariadb = tc.flavor == cluster.FlavorMariaDB
			src.end = fakeEnd{binlogFile, 991, tc.before}
			src.next = &fakeEnd{binlogFile, 1100, tc.after}
			p, err := positionNow(src.connect(t), tc.flavor)
			if err != nil {
				t.Fatal(err)
			}
			if p.File != binlogFile || p.Pos != 991 {
				t.Errorf("position %s, want %s:991", p.String(), binlogFile)
			}
			got, err := mysql.ParseGTIDSet(tc.flavor, p.GTIDSet)
			if err != nil {
				t.Fatalf("gtid set %q: %v", p.GTIDSet, err)
			}
			want, _ := mysql.ParseGTIDSet(tc.flavor, tc.before)
			if !got.Equal(want) {
				t.Errorf("gtid set %q at %s:991, want %q: the transaction after the position would be skipped (queries %q)", p.GTIDSet, binlogFile, tc.before, src.sent())
			}
		})
	}
}

// TestPositionNowWithoutGTIDs: a MySQL source without gtid_mode=ON gives a position
// without a GTID set (it resumes by file/pos).
func TestPositionNowWithoutGTIDs(t *testing.T) {
	for _, mode := range []string{"OFF", "ON_PERMISSIVE", ""} {
		src := fakeMySQLSource()
		src.gtidMode = mode
		src.end = fakeEnd{binlogFile, 991, uuidA + ":1-12"}
		p, err := positionNow(src.connect(t), cluster.FlavorMySQL)
		if err != nil {
			t.Fatal(err)
		}
		if p.GTIDSet != "" || p.File != binlogFile || p.Pos != 991 {
			t.Errorf("gtid_mode %q: position %s, want %s:991 without a GTID set", mode, p.String(), binlogFile)
		}
	}
}
