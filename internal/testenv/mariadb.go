package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// MariaDBOptions configures a private MariaDB server (StartMariaDBs).
type MariaDBOptions struct {
	ServerID uint32
	DomainID uint32 // gtid_domain_id
	// Binlog is the binlog basename; servers with different basenames make a resume by
	// the other server's file name fail instead of reading a same-named file.
	Binlog string
	// GeneralLog logs every statement the server receives to mysql.general_log, for
	// Statements.
	GeneralLog bool
	Args       []string // more mariadbd options
}

// PrivateMariaDB is a MariaDB server of one test's own, on a free loopback port, with a
// ROW binlog as the shared test server writes it (deploy/testenv/mariadb.sh) and
// log_slave_updates on, so it can serve as a replica that becomes the primary. root has
// no password over TCP. It stops when the test ends.
type PrivateMariaDB struct {
	Addr       string // 127.0.0.1:port
	Dir        string
	generalLog bool
}

// mariadbStartTimeout bounds one server's start (its datadir is fresh and small).
const mariadbStartTimeout = 60 * time.Second

// StartMariaDBs starts one private MariaDB per options, their datadirs initialised side by
// side. The servers come from the MariaDB test service's packages: the test is skipped
// when that service is not set up (failed under CI=true, like Require), and fails naming
// the binary when it is but mariadbd or mariadb-install-db cannot be found.
func StartMariaDBs(t testing.TB, opts ...MariaDBOptions) []*PrivateMariaDB {
	t.Helper()
	Require(t, MySQL)
	bins := map[string]string{}
	for _, name := range []string{"mariadbd", "mariadb-install-db"} {
		p, err := lookSbin(name)
		if err != nil {
			t.Fatalf("private MariaDB: %v (install the packages mariadb-server and mariadb-client, as deploy/testenv/mariadb.sh does)", err)
		}
		bins[name] = p
	}
	out := make([]*PrivateMariaDB, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		m := &PrivateMariaDB{Dir: t.TempDir(), generalLog: o.GeneralLog}
		out[i] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.start(t, bins, o)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("private MariaDB: %v", err)
	}
	return out
}

// lookSbin finds a server binary in PATH or the sbin folders a test's PATH may lack.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH nor in /usr/sbin, /usr/local/sbin, /sbin", name)
}

// start initialises the datadir and runs mariadbd until the test ends. It runs on its own
// goroutine: errors are returned, never t.Fatal.
func (m *PrivateMariaDB) start(t testing.TB, bins map[string]string, o MariaDBOptions) error {
	data := filepath.Join(m.Dir, "data")
	userArg := []string{}
	if os.Getuid() == 0 {
		userArg = []string{"--user=root"} // mariadbd refuses root unless told so
	}
	// Small InnoDB files: the datadir is written in 2 s instead of 3 and takes 22 MB.
	small := []string{"--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"}
	// A temporary folder of its own: installs running at once in the shared /tmp collide
	// on the bootstrap's temporary table files ("Unknown table 'mysql.tmp_user_sys'").
	tmp := filepath.Join(m.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	small = append(small, "--tmpdir="+tmp)
	install := exec.Command(bins["mariadb-install-db"], append(append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, userArg...), small...)...)
	if b, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db: %v\n%s", err, b)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	m.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// A Unix socket path must fit in sun_path (108 bytes); t.TempDir may be deeper.
	sock := filepath.Join(m.Dir, "s.sock")
	if len(sock) > 100 {
		sock = filepath.Join(os.TempDir(), fmt.Sprintf("binlake-mariadb-%d.sock", port))
	}
	args := append(append([]string{"--no-defaults"}, userArg...),
		"--datadir="+data, "--socket="+sock, "--pid-file="+filepath.Join(m.Dir, "mariadbd.pid"),
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve",
		"--log-error="+filepath.Join(m.Dir, "error.log"),
		"--log-bin="+filepath.Join(data, o.Binlog), "--log-slave-updates",
		"--server-id="+strconv.FormatUint(uint64(o.ServerID), 10),
		"--gtid-domain-id="+strconv.FormatUint(uint64(o.DomainID), 10),
		"--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0")
	args = append(args, small...)
	if o.GeneralLog {
		args = append(args, "--general-log=1", "--log-output=TABLE")
	}
	args = append(args, o.Args...)
	cmd := exec.Command(bins["mariadbd"], args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mariadbd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return m.waitReady(exited)
}

// waitReady polls until root can log in over TCP, the server exits, or the start timeout.
func (m *PrivateMariaDB) waitReady(exited <-chan error) error {
	deadline := time.Now().Add(mariadbStartTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := client.ConnectWithContext(ctx, m.Addr, "root", "", "", 2*time.Second)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("mariadbd on %s exited (%v); see %s", m.Addr, werr, filepath.Join(m.Dir, "error.log"))
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd on %s not ready after %s: %v; see %s", m.Addr, mariadbStartTimeout, err, filepath.Join(m.Dir, "error.log"))
		}
	}
}

// freePort asks the kernel for a free loopback port. mariadbd binds it a moment later;
// were it taken meanwhile, the start fails with the server's error log named.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Conn connects to the server as root (closed when the test ends).
func (m *PrivateMariaDB) Conn(t testing.TB) *client.Conn {
	t.Helper()
	c, err := client.Connect(m.Addr, "root", "", "")
	if err != nil {
		t.Fatalf("connect to the private MariaDB on %s: %v", m.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Statements lists the statements the server received that start with prefix
// (case-insensitive), from its general log (MariaDBOptions.GeneralLog).
func (m *PrivateMariaDB) Statements(t testing.TB, c *client.Conn, prefix string) []string {
	t.Helper()
	if !m.generalLog {
		t.Fatalf("private MariaDB on %s: Statements needs GeneralLog", m.Addr)
	}
	r, err := c.Execute("SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE command_type = 'Query' AND argument LIKE CONCAT(?, '%')", prefix)
	if err != nil {
		t.Fatalf("private MariaDB on %s: read the general log: %v", m.Addr, err)
	}
	var out []string
	for i := range r.RowNumber() {
		s, _ := r.GetString(i, 0)
		out = append(out, s)
	}
	return out
}
