package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
)

// These tests run the real binary, as `make run` does. They need no external service, so
// they run in every `go test ./...`; only the browser part needs Chromium, and skips
// without it unless CI=true.

func TestMain(m *testing.M) { testenv.RunRemovingBinlake(m) }

// upProcess is a running `binlake up` and the URLs it printed.
type upProcess struct {
	*testenv.Proc
	urls map[string]string // "status page", "judge API", "alarm API" → URL
}

var (
	readyLine = regexp.MustCompile(`^Ctrl-C stops it`)
	urlLines  = regexp.MustCompile(`(?m)^[ \t]+(status page|judge API|alarm API)[ \t]+(http://\S+)`)
)

// startBinary starts `binlake up args…` as name, without waiting for it to serve.
func startBinary(t *testing.T, name string, args ...string) *testenv.Proc {
	t.Helper()
	return testenv.StartBinlake(t, name, nil, append([]string{"up"}, args...)...)
}

// startServing starts `binlake up args…` as name and waits until it printed its URLs.
func startServing(t *testing.T, name string, args ...string) *upProcess {
	t.Helper()
	p := &upProcess{Proc: startBinary(t, name, args...), urls: map[string]string{}}
	p.WaitOutput(t, readyLine, 60*time.Second)
	for _, m := range urlLines.FindAllStringSubmatch(p.Output(), -1) {
		// Base URLs: the lines show an endpoint of each.
		u := strings.TrimSuffix(m[2], "/")
		p.urls[m[1]] = strings.TrimSuffix(strings.TrimSuffix(u, "/v1/nodes"), "/v1/alerts")
	}
	return p
}

// poll asks try every 100 ms until it says yes, failing after d with what it waited for
// and try's last state. Not testify's Eventually: that runs try on a goroutine of its
// own, and the tries here stop the test at once (t.Fatal, which must run on the test's
// goroutine) when the process they wait on has exited.
func poll(t *testing.T, what string, d time.Duration, try func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for {
		ok, state := try()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func call(method, url, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// TestUpSmoke is the acceptance test of `binlake up`: the binary on free ports and a
// temporary data folder answers /healthz, places on the local node, shows the agent's
// points, renders the status page in headless Chromium, and exits 0 on SIGINT.
func TestUpSmoke(t *testing.T) {
	t.Parallel() // waits on services and processes; the package runs its long tests side by side
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	node := fmt.Sprintf("smoke-%d", os.Getpid())
	p := startServing(t, "up", "--data", dir, "--node", node, "--interval", "200ms",
		"--judge-http", "127.0.0.1:0", "--alarm-http", "127.0.0.1:0")
	judge, alarm := p.urls["judge API"], p.urls["alarm API"]
	if judge == "" || alarm == "" || p.urls["status page"] == "" {
		t.Fatalf("upURLs printed: %v", p.urls)
	}
	for _, base := range []string{judge, alarm} {
		code, body, err := call("GET", base+"/healthz", "")
		if err != nil || code != 200 {
			t.Fatalf("GET %s/healthz = %d %s %v", base, code, body, err)
		}
	}

	poll(t, "POST /v1/placement answers the local node", 30*time.Second, func() (bool, string) {
		code, body, err := call("POST", judge+"/v1/placement", `{"instance":"smoke"}`)
		var d struct{ Node string }
		_ = json.Unmarshal(body, &d)
		return err == nil && code == 200 && d.Node == node, fmt.Sprintf("%d %s %v", code, body, err)
	})
	poll(t, "GET /v1/nodes shows the agent's points", 30*time.Second, func() (bool, string) {
		code, body, err := call("GET", judge+"/v1/nodes", "")
		var ns struct {
			Nodes []struct {
				Node    string
				Live    bool
				Batches int64 `json:"batches_this_hour"`
				Load    map[string]float64
			}
		}
		_ = json.Unmarshal(body, &ns)
		for _, n := range ns.Nodes {
			_, cpu := n.Load["cpu.util"]
			_, mem := n.Load["mem.used_pct"]
			if n.Node == node && n.Live && n.Batches >= 2 && cpu && mem {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d %s %v", code, body, err)
	})

	t.Run("status page in headless Chromium", func(t *testing.T) {
		dom, shot := renderPage(t, p.urls["status page"]+"/")
		for _, want := range []string{"BinLake judge", `id="nodes"`, ">" + node + "<", "live", ">smoke<"} {
			if !strings.Contains(dom, want) {
				t.Errorf("the rendered status page lacks %q:\n%s", want, dom)
			}
		}
		if st, err := os.Stat(shot); err != nil || st.Size() < 1000 {
			t.Errorf("screenshot %s: %v", shot, err)
		}
	})

	p.Signal(t, os.Interrupt)
	if err := p.Wait(t, 45*time.Second); err != nil {
		t.Fatalf("binlake up exited with %v after SIGINT\n%s", err, p.Output())
	}
	logs := p.Output()
	for _, want := range []string{"binlake up starting", "data=" + dir, "binlake up stopped", "judge stopped", "alarm stopped", "agent stopped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(logs, "level=ERROR") {
		t.Errorf("errors logged:\n%s", logs)
	}
}

// renderPage loads url in headless Chromium and returns the DOM and a screenshot's path.
// BINLAKE_UP_SCREENSHOT, when set, names where the screenshot is kept.
func renderPage(t *testing.T, url string) (string, string) {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if testenv.InCI() {
			t.Fatal("chromium is not installed (CI=true): apt-get install -y chromium")
		}
		t.Skip("chromium is not installed (apt-get install -y chromium); set CI=true to make this a failure")
	}
	shot := os.Getenv("BINLAKE_UP_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "status.png")
	}
	run := func(mode string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// A profile of its own, and nothing that talks to the network beyond url.
		args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--window-size=1280,800", mode, url}
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatalf("chromium %s did not finish within 60s\n%s", mode, stderr.String())
			}
			t.Fatalf("chromium %s: %v\n%s", mode, err, stderr.String())
		}
		return stdout.Bytes()
	}
	dom := string(run("--dump-dom"))
	run("--screenshot=" + shot)
	return dom, shot
}

// TestUpSecondOnTheSameDataFolderFails: the second process exits 1 naming the folder and
// the holder, and the first keeps serving.
func TestUpSecondOnTheSameDataFolderFails(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	first := startServing(t, "first", "--data", dir, "--node", "first", "--judge-http", "127.0.0.1:0", "--alarm-http", "127.0.0.1:0")
	second := startBinary(t, "second", "--data", dir, "--node", "second", "--judge-http", "127.0.0.1:0", "--alarm-http", "127.0.0.1:0")
	err := second.Wait(t, 60*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("second binlake up: %v, want exit status 1", err)
	}
	msg := second.Output()
	for _, want := range []string{"data folder in use", dir, fmt.Sprintf("pid %d", first.Pid()), "--data"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the second's error lacks %q:\n%s", want, msg)
		}
	}
	if code, _, err := call("GET", first.urls["judge API"]+"/healthz", ""); err != nil || code != 200 {
		t.Fatalf("the first stopped serving: %d %v", code, err)
	}
}
