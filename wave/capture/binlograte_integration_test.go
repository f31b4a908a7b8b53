package capture

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// payloadRows inserts n rows of a 1000-byte payload into db.t, in one statement.
func payloadRows(exec func(string), db string, from, n int) {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s.t VALUES ", db)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%d, REPEAT('x', 1000))", from+i)
	}
	exec(b.String())
}

// TestMeasureBinlogRateIntegration: on the test MariaDB, the measure counts at least
// the binlog this test writes during it (other tests write to the same server: only a
// lower bound holds), and its rate is the bytes over the time it took.
func TestMeasureBinlogRateIntegration(t *testing.T) {
	db, exec, _ := testenv.ScratchDatabase(t, "binlograte")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(1000))")
	a := testenv.RequireMySQL(t)
	src := cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB}

	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(700 * time.Millisecond) // after the measure's first listing
		for k := range 3 {
			payloadRows(exec, db, k*100, 100)
		}
	}()
	r, err := MeasureBinlogRate(testenv.Context(t), src, a.Password, 3*time.Second)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes < 300_000 {
		t.Errorf("measured %d bytes over %s; this test alone wrote 300 rows of 1000 bytes in it", r.Bytes, r.Over)
	}
	if r.Over < 3*time.Second || r.Over > 30*time.Second {
		t.Errorf("over %s, want about 3 s", r.Over)
	}
	if want := float64(r.Bytes) / r.Over.Seconds(); r.BytesPerS != want {
		t.Errorf("rate %v, want %d bytes over %s = %v", r.BytesPerS, r.Bytes, r.Over, want)
	}

	// Failures say why: a wrong password, a window of nothing.
	if _, err := MeasureBinlogRate(testenv.Context(t), cluster.Source{Addr: a.Addr, User: "binlake-no-such-user"}, "x", time.Second); err == nil || !strings.Contains(err.Error(), "connect to "+a.Addr) {
		t.Errorf("an unknown user: %v, want the connection's error", err)
	}
	if _, err := MeasureBinlogRate(testenv.Context(t), src, a.Password, 0); err == nil {
		t.Error("a window of 0 measured")
	}
}

// TestMeasureBinlogRateRotationIntegration: on a private MariaDB nobody else writes to,
// a rotation in the window (FLUSH BINARY LOGS) still counts what went into both logs,
// and a server without a binlog says so.
func TestMeasureBinlogRateRotationIntegration(t *testing.T) {
	servers := testenv.StartMariaDBs(t, testenv.MariaDBOptions{ServerID: 1, Binlog: "rot"},
		testenv.MariaDBOptions{ServerID: 2, Binlog: "off", Args: []string{"--skip-log-bin"}})
	on, off := servers[0], servers[1]
	conn := on.Conn(t)
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Execute(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE r")
	exec("CREATE TABLE r.t (id INT PRIMARY KEY, v VARCHAR(1000))")

	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(700 * time.Millisecond)
		payloadRows(exec, "r", 0, 100)
		exec("FLUSH BINARY LOGS")
		payloadRows(exec, "r", 100, 100)
	}()
	r, err := MeasureBinlogRate(testenv.Context(t), cluster.Source{Addr: on.Addr, User: "root", Flavor: cluster.FlavorMariaDB}, "", 2500*time.Millisecond)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	// 200 rows of 1000 bytes, and per statement its events' headers, the GTID and the
	// rotation's events: a few kilobytes.
	if r.Bytes < 200_000 || r.Bytes > 220_000 {
		t.Errorf("measured %d bytes across a rotation; 200 rows of 1000 bytes went into two logs", r.Bytes)
	}

	_, err = MeasureBinlogRate(testenv.Context(t), cluster.Source{Addr: off.Addr, User: "root", Flavor: cluster.FlavorMariaDB}, "", 100*time.Millisecond)
	if !errors.Is(err, ErrBinlogOff) {
		t.Errorf("a server without a binlog: %v, want ErrBinlogOff", err)
	}
	_, err = MeasureBinlogRate(canceled(), cluster.Source{Addr: on.Addr, User: "root", Flavor: cluster.FlavorMariaDB}, "", time.Minute)
	if err == nil {
		t.Error("a canceled measure answered")
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
