//go:build !agentonly

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
)

// startMariaDBWithoutBinlog starts a private mariadbd with log_bin off on a free port,
// with its data under t.TempDir(), and returns its address; root has no password.
func startMariaDBWithoutBinlog(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("mariadbd is not installed (apt-get install mariadb-server): %v", err)
		}
		t.Skipf("mariadbd is not installed: %v", err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	var asRoot []string
	if os.Getuid() == 0 {
		asRoot = []string{"--user=root"} // mariadbd refuses root unless told
	}
	// A temporary folder of its own: installs running at once in the shared /tmp collide
	// on the bootstrap's temporary table files.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("mariadb-install-db", append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--tmpdir=" + tmp}, asRoot...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close()
	logFile := filepath.Join(dir, "error.log")
	cmd := exec.Command(bin, append([]string{"--no-defaults", "--datadir=" + data,
		"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--port=" + port, "--bind-address=127.0.0.1", "--log-error=" + logFile,
		"--skip-log-bin", "--innodb-buffer-pool-size=16M"}, asRoot...)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mariadbd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := client.Connect(addr, "root", "", "")
		if err == nil {
			conn.Close()
			return addr
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logFile)
			t.Fatalf("mariadbd exited: %v\n%s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("mariadbd on %s not ready after 30s: %v\n%s", addr, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// notifications is a channel of `up` that hands each message to the test.
type notifications chan notify.Message

func (n notifications) Notify(ctx context.Context, m notify.Message) error {
	select {
	case n <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestUpAlertsACaptureThatNeverStartsIntegration: `binlake up --mysql` on a source with
// log_bin off cannot start its capture and retries for ever; the built-in policy
// wave-not-running (its `for` shortened from 1m) alerts, naming the instance and why.
func TestUpAlertsACaptureThatNeverStartsIntegration(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	addr := startMariaDBWithoutBinlog(t)
	got := make(notifications, 16)
	chans, err := LoadChannels("", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	chans.Notifiers["test"] = got
	pols, _, err := LoadPolicies("", chans)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pols {
		if p.Name == "wave-not-running" {
			p.For, found = 300*time.Millisecond, true
		}
	}
	if !found {
		t.Fatal("no built-in policy wave-not-running")
	}
	s := startUp(t, upOptions{DataDir: t.TempDir(), Node: "binlog-off", Channels: &chans, Policies: pols,
		MySQL: &MySQL{Addr: addr, User: "root"}})

	deadline := time.After(60 * time.Second)
	for {
		var m notify.Message
		select {
		case m = <-got:
		case <-deadline:
			var st any
			getJSON(t, "GET", s.urls.Wave+"/status", "", &st)
			t.Fatalf("no wave-not-running alert within 60s; the wave's status: %v", st)
		}
		for _, a := range m.Alerts {
			if a.Labels["alertname"] != "wave-not-running" || a.Status != "firing" {
				continue
			}
			// One alert per instance (by: [instance]): the reason is the summary's, not a label
			// that would make another alert when it changes.
			if a.Labels["node"] != "binlog-off" || a.Labels["instance"] != InstanceID || a.Labels["reason"] != "" {
				t.Fatalf("alert labels %v: want node binlog-off, instance %s, no reason", a.Labels, InstanceID)
			}
			if sum := a.Annotations["summary"]; !strings.Contains(sum, InstanceID) || !strings.Contains(sum, wave.ReasonBinlogOff) {
				t.Fatalf("summary %q names neither the instance nor the reason", sum)
			}
			// The wave's /status has the full error for the operator.
			var st struct{ Instances []wave.InstanceStatus }
			getJSON(t, "GET", s.urls.Wave+"/status", "", &st)
			if len(st.Instances) != 1 || st.Instances[0].Reason != wave.ReasonBinlogOff || !strings.Contains(st.Instances[0].Error, "log_bin") {
				t.Fatalf("wave status %+v: want the binlog_off reason and an error naming log_bin", st.Instances)
			}
			// So does the status page, beside the firing alert; it reloads every agent
			// interval (100 ms: the 1 s floor).
			page := getPage(t, s.urls.Status)
			for _, want := range []string{`<td class="err">wave-not-running</td>`, "<td>" + InstanceID + "</td>",
				"<td>" + wave.ReasonBinlogOff + "</td>", "log_bin", `<meta http-equiv="refresh" content="1">`} {
				if !strings.Contains(page, want) {
					t.Fatalf("the status page lacks %q:\n%s", want, page)
				}
			}
			return
		}
	}
}
