//go:build !agentonly

package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/alarm/policy"
)

// getPage GETs url and returns the body of its 200 answer.
func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

// In `binlake up` the status page reads the alarm in the same process: a policy that
// fires on the first batch shows; there is no wave without --mysql; the page reloads
// every agent interval.
func TestUpStatusPageShowsFiringAlerts(t *testing.T) {
	chans, err := LoadChannels("", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	pols, err := policy.Parse(strings.NewReader(`policies:
  - name: always
    metric: cpu.util
    condition: last >= 0
    severity: P3
    channels: [`+LogChannel+`]
    annotations:
      summary: "{{ .Node }} <b>has</b> a CPU"
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := startUp(t, upOptions{DataDir: t.TempDir(), Node: "up-status", Channels: &chans, Policies: pols, AgentInterval: 2 * time.Second})
	deadline := time.Now().Add(30 * time.Second)
	for {
		page := getPage(t, s.urls.Status)
		if strings.Contains(page, `<h2>Firing alerts (1)</h2>`) {
			for _, want := range []string{`<td class="err">always</td><td>P3</td><td>up-status</td><td>up-status &lt;b&gt;has&lt;/b&gt; a CPU</td>`,
				`<meta http-equiv="refresh" content="2">`, "<p>No wave has reported an instance.</p>"} {
				if !strings.Contains(page, want) {
					t.Fatalf("the status page lacks %q:\n%s", want, page)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status page shows no firing alert within 30s:\n%s", page)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
