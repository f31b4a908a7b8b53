//go:build !agentonly

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
)

// readmeReplicationUser creates on the test MariaDB the replication user of the README's
// ```sql block (One machine), as written there but for its name, its password and the
// database (a unique user, a password of the test's and db for `shop`), and drops it when
// the test ends. So every capture through it checks that the README's grants suffice.
func readmeReplicationUser(t *testing.T, db string) (user, password string) {
	t.Helper()
	blocks := testenv.FencedBlocks(t, filepath.Join("..", "..", "README.md"), readmeOneMachine, "sql")
	if len(blocks) != 1 {
		t.Fatalf("README.md, %s: %d ```sql blocks, want the one that creates the replication user", readmeOneMachine, len(blocks))
	}
	sql := blocks[0]
	for _, want := range []string{"'repl'@'%'", "IDENTIFIED BY 'secret'", " shop.* "} {
		if !strings.Contains(sql, want) {
			t.Fatalf("README.md's replication user lacks %q, which this test replaces:\n%s", want, sql)
		}
	}
	user = fmt.Sprintf("binlake_t%d", time.Now().UnixNano()%1e9)
	password = fmt.Sprintf("pw-%d", time.Now().UnixNano())
	sql = strings.NewReplacer("'repl'@", "'"+user+"'@", "'secret'", "'"+password+"'", " shop.* ", " "+db+".* ").Replace(sql)
	_, exec, _ := testenv.ScratchDatabase(t, "repluser")
	t.Cleanup(func() { exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	for _, stmt := range strings.Split(sql, ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			exec(stmt)
		}
	}
	return user, password
}
