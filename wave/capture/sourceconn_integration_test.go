package capture

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// TestKillStaleIntegration checks where killStale sends a KILL for a binlog connection: not
// to another server answering the address, not to a connection id that is not a binlog
// dump, and on the owning server, where the dump then ends. The syncer's own Close sends
// none (singleDial).
func TestKillStaleIntegration(t *testing.T) {
	s := testenv.StartMariaDBs(t,
		testenv.MariaDBOptions{ServerID: 21, DomainID: 1, Binlog: "a-bin", GeneralLog: true},
		testenv.MariaDBOptions{ServerID: 22, DomainID: 2, Binlog: "b-bin", GeneralLog: true})
	a, b := s[0], s[1]
	ac, bc := a.Conn(t), b.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	host, ps, _ := strings.Cut(a.Addr, ":")
	port, _ := strconv.ParseUint(ps, 10, 16)
	var owner binlogOwner
	dial := &singleDial{}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: testenv.ReplicaServerID(), Flavor: cluster.FlavorMariaDB, Host: host, Port: uint16(port), User: "root",
		DisableRetrySync: true, Dialer: dial.dial, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Option: func(c *client.Conn) error {
			var err error
			owner, err = identify(c, cluster.FlavorMariaDB)
			return err
		},
	})
	defer syncer.Close()
	r, err := ac.Execute("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := r.GetString(0, 0)
	streamer, err := syncer.StartSync(mysql.Position{Name: file, Pos: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamer.GetEvent(ctx); err != nil {
		t.Fatalf("first binlog event: %v", err)
	}
	if owner.connID == 0 || owner.serverID != 21 {
		t.Fatalf("owner of the binlog connection: %+v, want a connection on server_id 21", owner)
	}

	killed, reason, err := killStale(ctx, Endpoint{Addr: b.Addr, User: "root"}, cluster.FlavorMariaDB, owner)
	if err != nil || killed || !strings.Contains(reason, "server_id 22") {
		t.Errorf("killStale on another server: killed %v, reason %q, err %v; want no KILL, naming server_id 22", killed, reason, err)
	}
	if k := b.Statements(t, bc, "KILL"); len(k) > 0 {
		t.Errorf("the other server got %q", k)
	}

	notDump := owner
	notDump.connID = ac.GetConnectionID()
	killed, reason, err = killStale(ctx, Endpoint{Addr: a.Addr, User: "root"}, cluster.FlavorMariaDB, notDump)
	if err != nil || killed || !strings.Contains(reason, "another session") {
		t.Errorf("killStale of a plain session: killed %v, reason %q, err %v; want no KILL", killed, reason, err)
	}
	if _, err := ac.Execute("SELECT 1"); err != nil {
		t.Errorf("the plain session after killStale: %v", err)
	}

	killed, reason, err = killStale(ctx, Endpoint{Addr: a.Addr, User: "root"}, cluster.FlavorMariaDB, owner)
	if err != nil || !killed {
		t.Fatalf("killStale on the owning server: killed %v, reason %q, err %v; want a KILL", killed, reason, err)
	}
	for {
		if _, err := streamer.GetEvent(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the killed binlog connection still streams")
			}
			break // the dump ended
		}
	}
	syncer.Close()
	if k := a.Statements(t, ac, "KILL"); len(k) != 1 {
		t.Errorf("KILLs on the owning server: %q, want exactly killStale's one", k)
	}
}
