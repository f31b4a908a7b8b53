//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/judgetest"
)

// TestInstanceAddAsksJudgeWithToken: `binlake instance add -judge` against a judge that
// requires a token is refused without it (saying so) and, given the token by file,
// assigns the instance where the judge answers, on the real ZooKeeper.
func TestInstanceAddAsksJudgeWithToken(t *testing.T) {
	zk := testenv.Require(t, testenv.ZooKeeper)
	root := fmt.Sprintf("/binlake-judge-add-%d", time.Now().UnixNano())
	dir := t.TempDir()

	srv := judgetest.Start(t, "s3cret")

	instFile := filepath.Join(dir, "orders.yaml")
	writeFile(t, instFile, "id: orders\nsource:\n  addr: 127.0.0.1:3307\n  user: binlake\n  server_id: 4242\nsubscriptions:\n  - name: all\n    topic: orders.rows\n")
	tokenFile := filepath.Join(dir, "judge.token")
	writeFile(t, tokenFile, "s3cret\n")
	t.Setenv(judge.TokenEnv, "")

	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), append([]string{"add", "-zk", zk, "-root", root, "-judge", srv.URL, "-f", instFile}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	out, err := run()
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "-judge-token-file") {
		t.Fatalf("without the token: %v (%s), want the judge's 401 and how to give the token", err, out)
	}
	out, err = run("-judge-token-file", tokenFile)
	if err != nil {
		t.Fatalf("with the token: %v (%s)", err, out)
	}
	if !strings.Contains(out, "instance orders added, assigned to wave-idle") {
		t.Fatalf("with the token: %q, want orders assigned to wave-idle, the judge's choice", out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
