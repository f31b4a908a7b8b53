//go:build !agentonly

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/sink"
)

// TestUpRowsToStdoutIntegration: with -rows - the process's stdout carries the rows and
// nothing else, so `binlake up … -rows - | consumer` works; the addresses and the log
// are on stderr.
func TestUpRowsToStdoutIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, execSQL, _ := testenv.ScratchDatabase(t, "up_stdout")
	execSQL("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(20))")

	var out, errOut bytes.Buffer
	stdout, stderr := &syncWriter{w: &out}, &syncWriter{w: &errOut}
	read := func(w *syncWriter, b *bytes.Buffer) string { w.mu.Lock(); defer w.mu.Unlock(); return b.String() }
	cmd := exec.Command(testenv.BinlakeBinary(t), "up", "-data", t.TempDir(), "-judge-http", "127.0.0.1:0",
		"-alarm-http", "127.0.0.1:0", "-wave-http", "127.0.0.1:0", "-mysql", a.User+"@tcp("+a.Addr+")/",
		"-mysql-sub", "t=it.rows:"+db+`\.t`, "-rows", "-")
	cmd.Env = append(os.Environ(), MySQLPasswordEnv+"="+a.Password)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()

	waveURL := regexp.MustCompile(`(?m)^\s+wave\s+(http://\S+)/status`)
	var url string
	poll(t, "the banner on stderr", 60*time.Second, func() (bool, string) {
		if m := waveURL.FindStringSubmatch(read(stderr, &errOut)); m != nil {
			url = m[1]
			return true, ""
		}
		return false, read(stderr, &errOut)
	})
	waitRunning(t, url)
	execSQL("INSERT INTO " + db + ".t VALUES (1, 'one'), (2, 'two')")
	poll(t, "two rows on stdout", 30*time.Second, func() (bool, string) {
		s := read(stdout, &out)
		return strings.Count(s, `"database":"`+db+`"`) >= 2, s
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("up: %v\n%s", err, read(stderr, &errOut))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("up did not stop within 60s of SIGINT")
	}

	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	for _, l := range lines {
		var row sink.Line
		if err := json.Unmarshal([]byte(l), &row); err != nil || row.Topic == "" {
			t.Fatalf("stdout line %q is not a row (%v); stdout:\n%s", l, err, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "binlake is up:") || !strings.Contains(errOut.String(), "binlake up stopped") {
		t.Fatalf("stderr lacks the banner or the log:\n%s", errOut.String())
	}
	if strings.Contains(errOut.String(), a.Password) && a.Password != "" {
		t.Fatal("the source password reached stderr")
	}
}
