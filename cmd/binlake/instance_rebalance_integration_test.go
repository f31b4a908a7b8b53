//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge/judgetest"
	"github.com/binlake/binlake/wave/cluster"
)

// TestInstanceRebalanceDryRun: `binlake instance rebalance` on the real ZooKeeper reads
// the cluster (two live waves, 24 idle instances all on one) and prints the judge's
// plan: with the default floor (100 per instance) and band (2000), two moves with their
// reason and the loads before and after, moving nothing. -apply without a balancer
// running says so.
func TestInstanceRebalanceDryRun(t *testing.T) {
	zkAddr := testenv.Require(t, testenv.ZooKeeper)
	root := fmt.Sprintf("/binlake-rebalance-cli-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := registerWaves(t, zkAddr, root, "wave-busy", "wave-idle")
	for i := range 24 {
		inst := &cluster.Instance{ID: fmt.Sprintf("i%d", i), Source: cluster.Source{Addr: "127.0.0.1:3307", User: "u", Flavor: cluster.FlavorMariaDB, ServerID: uint32(500 + i)},
			Subscriptions: []cluster.Subscription{{Name: "all", Topic: "t"}}}
		if _, err := cluster.AddInstance(ctx, c, inst, "wave-busy", nil); err != nil {
			t.Fatal(err)
		}
	}
	srv := judgetest.Start(t, "") // the default goals: a floor of 100 per instance, band 2000
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(ctx, append([]string{"rebalance", "-zk", zkAddr, "-root", root}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}

	if out, err := run(); err == nil || !strings.Contains(err.Error(), "needs a judge") {
		t.Fatalf("without -judge: %v (%s), want an error saying a judge is needed", err, out)
	}
	out, err := run("-judge", srv.URL, "-json")
	if err != nil {
		t.Fatal(err)
	}
	// Two spread moves bring the spread within the band (2000 rows/s); then wave-idle,
	// below half its share of the 24 instances, takes them up to its share, 12.
	if !strings.Contains(out, `"balanced":true`) || !strings.Contains(out, `"before":{"wave-busy":2400,"wave-idle":0}`) ||
		strings.Count(out, `"reason":"spread"`) != 2 || strings.Count(out, `"reason":"share"`) != 10 || !strings.Contains(out, `"model":"rows"`) {
		t.Fatalf("plan: %s, want two spread moves from 2400 against 0, then ten share moves, in rows", out)
	}
	out, err = run("-judge", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"model: rows (planned in rows/s: no cpu.cores from wave-busy, wave-idle)",
		"goals: hard max none, band 2000", "plan: 12 moves, highest load 2400 → 1200, spread 2400 → 0, balanced",
		"wave-busy  wave-idle  spread  100   2400 → 2300  0 → 100", "wave-busy  wave-idle  share   100   2200 → 2100  200 → 300",
		"wave-busy  2400          1200", "dry run: nothing moved"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	for i := range 24 {
		if v, err := c.Get(ctx, cluster.AssignKey(fmt.Sprintf("i%d", i))); err != nil || string(v.Data) != "wave-busy" {
			t.Errorf("instance i%d assigned to %q after a dry run, want wave-busy", i, v.Data)
		}
	}
	if out, err := run("-apply"); err == nil || !strings.Contains(err.Error(), "no balancer runs") {
		t.Fatalf("-apply without a balancer: %v (%s), want an error saying no balancer runs", err, out)
	}
}

// TestInstanceRebalanceJudgeCAFile: against a judge served over HTTPS with a private
// certificate, `binlake instance rebalance` needs -judge-ca-file: without it the
// certificate is refused, with it the plan comes back.
func TestInstanceRebalanceJudgeCAFile(t *testing.T) {
	zkAddr := testenv.Require(t, testenv.ZooKeeper)
	root := fmt.Sprintf("/binlake-rebalance-ca-%d", time.Now().UnixNano())
	srv := judgetest.StartTLS(t, "")
	ca := filepath.Join(t.TempDir(), "judge-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(context.Background(), append([]string{"rebalance", "-zk", zkAddr, "-root", root, "-judge", srv.URL, "-json"}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := run(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without -judge-ca-file: %v (%s), want the certificate refused", err, out)
	}
	out, err := run("-judge-ca-file", ca)
	if err != nil || !strings.Contains(out, `"goals"`) {
		t.Fatalf("with -judge-ca-file: %v (%s), want a plan", err, out)
	}
}
