//go:build !agentonly

package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/binlake/binlake/judge"
)

// TestDocsUseJudgePort: where `binlake instance -h`, README.md and deploy/README.md point
// at a judge by its host name (http://judge:PORT), PORT is the judge's default port, the
// one a judge.yaml without http.listen serves, and binlake up's.
func TestDocsUseJudgePort(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "judge.yaml")
	writeFile(t, cfg, "bus: {kind: none}\n")
	c, err := judge.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(c.HTTP.Listen)
	if err != nil {
		t.Fatal(err)
	}
	if _, upPort, _ := net.SplitHostPort(DefaultJudgeListen); upPort != port {
		t.Errorf("binlake up's judge listens on %s, but the judge's default port is %s", DefaultJudgeListen, port)
	}
	texts := map[string]string{"binlake instance -h": instanceUsage}
	for _, f := range []string{"../../README.md", "../../deploy/README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	seen := 0
	for name, text := range texts {
		for _, m := range regexp.MustCompile(`//judge:(\d+)`).FindAllStringSubmatch(text, -1) {
			seen++
			if m[1] != port {
				t.Errorf("%s: %s, but the judge's default port is %s", name, m[0], port)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no http://judge:PORT in the help or the READMEs: the test checks nothing")
	}
}
