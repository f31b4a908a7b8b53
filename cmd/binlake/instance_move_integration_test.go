//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/judgetest"
	"github.com/binlake/binlake/wave/cluster"
)

// TestInstanceNodeMustBeLive: on the real ZooKeeper, `instance move -node` and `instance
// add -node` to a wave that is not live are refused, naming it and listing the live
// waves, and change nothing; a live wave is taken; -force assigns to a wave yet to start.
func TestInstanceNodeMustBeLive(t *testing.T) {
	zkAddr := testenv.Require(t, testenv.ZooKeeper)
	root := fmt.Sprintf("/binlake-move-live-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := registerWaves(t, zkAddr, root, "wave-2", "wave-1")
	inst := &cluster.Instance{ID: "orders", Source: cluster.Source{Addr: "127.0.0.1:3307", User: "u", Flavor: cluster.FlavorMariaDB, ServerID: 4244},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "orders.rows"}}}
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-1", nil); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runInstance(ctx, append(args, "-zk", zkAddr, "-root", root), &out, &errOut)
		return out.String(), err
	}
	assigned := func() string {
		v, err := c.Get(ctx, cluster.AssignKey("orders"))
		if err != nil {
			t.Fatal(err)
		}
		return string(v.Data)
	}

	out, err := run("move", "orders", "-node", "wave-99")
	const want = "instance move: -node: wave wave-99 is not live (live waves: wave-1, wave-2); give a live wave, or -force to assign to a wave yet to start"
	if err == nil || err.Error() != want {
		t.Fatalf("move to wave-99: %v (%s)\nwant the error %q", err, out, want)
	}
	t.Logf("binlake instance move orders -node wave-99: %v", err)
	if a := assigned(); a != "wave-1" {
		t.Fatalf("after the refused move orders is assigned to %s, want wave-1 still", a)
	}
	if out, err := run("move", "orders", "-node", "wave-2"); err != nil || out != "instance orders assigned to wave-2\n" {
		t.Fatalf("move to the live wave-2: %v %q", err, out)
	}
	out, err = run("move", "orders", "-node", "wave-99", "-force")
	const forced = "instance orders assigned to wave-99\ngiven with -node -force: wave wave-99 is not live (live waves: wave-1, wave-2); the instance is captured once that wave starts, unless a running balancer places it on a live wave first (after its balancer.failover_grace)\n"
	if err != nil || out != forced || assigned() != "wave-99" {
		t.Fatalf("move -force to wave-99: %v %q, assigned to %s; want %q", err, out, assigned(), forced)
	}
	t.Logf("binlake instance move orders -node wave-99 -force:\n%s", out)

	// add -node: the same rule, and nothing is stored.
	dir := t.TempDir()
	writeFile(t, dir+"/users.yaml", "id: users\nsource:\n  addr: 127.0.0.1:3307\n  user: u\n  server_id: 4245\nsubscriptions:\n  - name: all\n    topic: users.rows\n")
	out, err = run("add", "-f", dir+"/users.yaml", "-node", "wave-9")
	if err == nil || !strings.Contains(err.Error(), "instance add: -node: wave wave-9 is not live (live waves: wave-1, wave-2)") {
		t.Fatalf("add -node wave-9: %v (%s)", err, out)
	}
	if ids, _ := cluster.ListInstances(ctx, c); len(ids) != 1 {
		t.Fatalf("after the refused add: instances %v, want orders only", ids)
	}
	if out, err := run("add", "-f", dir+"/users.yaml", "-node", "wave-1"); err != nil || !strings.Contains(out, "instance users added, assigned to wave-1") {
		t.Fatalf("add -node wave-1: %v %q", err, out)
	}
}

// TestInstanceAddConfigUsesBalancerJudge: `instance add|move -config wave.yaml` place with
// the judge that the file's balancer.judge names (not at random), and say so: the
// judge's algorithm and the judge's URL with where it came from. A file without a judge
// places at random among the live waves, saying that the file names none.
func TestInstanceAddConfigUsesBalancerJudge(t *testing.T) {
	zkAddr := testenv.Require(t, testenv.ZooKeeper)
	root := fmt.Sprintf("/binlake-add-config-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := judgetest.Start(t, "")
	t.Setenv(judge.TokenEnv, "")
	dir := t.TempDir()
	coordYAML := fmt.Sprintf("node: wave-x\ncoordinator:\n  kind: zk\n  servers: [%s]\n  root: %s\nsink: {kind: stdout}\n", zkAddr, root)
	withJudge, without := filepath.Join(dir, "wave.yaml"), filepath.Join(dir, "plain.yaml")
	writeFile(t, withJudge, coordYAML+"balancer:\n  judge: "+srv.URL+"\n")
	writeFile(t, without, coordYAML)
	for i, id := range []string{"orders", "users"} { // each with its own server_id, which add requires
		writeFile(t, filepath.Join(dir, id+".yaml"), "id: "+id+"\nsource:\n  addr: 127.0.0.1:3307\n  user: u\n  server_id: "+strconv.Itoa(4246+10*i)+"\nsubscriptions:\n  - name: all\n    topic: "+id+".rows\n")
	}
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := runInstance(ctx, args, &out, &errOut); err != nil {
			t.Fatalf("binlake instance %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		t.Logf("binlake instance %s:\n%s", strings.Join(args, " "), out.String())
		return withoutStart(t, out.String())
	}

	judgeWaves := registerWaves(t, zkAddr, root, "wave-busy", "wave-idle")
	out := run("add", "-config", withJudge, "-f", filepath.Join(dir, "orders.yaml"), "-measure", "0")
	want := "instance orders added, assigned to wave-idle\nchosen by the judge's leastload algorithm among 2 candidates (score "
	judgeLine := "\nthe judge: " + srv.URL + " (balancer.judge of " + withJudge + ")\n"
	if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, judgeLine) {
		t.Fatalf("add -config with balancer.judge said:\n%s\nwant it to start %q and end %q", out, want, judgeLine)
	}
	out = run("move", "orders", "-config", withJudge)
	if !strings.HasPrefix(out, "instance orders assigned to wave-busy\nchosen by the judge's leastload algorithm among 1 candidate (score") || !strings.HasSuffix(out, judgeLine) {
		t.Fatalf("move -config with balancer.judge said:\n%s", out)
	}

	// No balancer.judge: random among the live waves, and said so; the judge's waves
	// are gone, wave-1 is the one.
	judgeWaves.Close()
	registerWaves(t, zkAddr, root, "wave-1")
	out = run("add", "-config", without, "-f", filepath.Join(dir, "users.yaml"))
	if want := "instance users added, assigned to wave-1\nchosen at random among the live waves (no -judge, and plain.yaml sets no balancer.judge)\n"; out != want {
		t.Fatalf("add -config without balancer.judge said:\n%s\nwant:\n%s", out, want)
	}
}

// withoutStart is the output of instance add without its last line, which says where the
// instance starts (wave.ResolveStart), or out itself when it has none.
func withoutStart(t *testing.T, out string) string {
	t.Helper()
	body, last, ok := strings.Cut(strings.TrimSuffix(out, "\n"), "\nstart: ")
	if !ok {
		return out
	}
	if strings.Contains(last, "\n") {
		t.Fatalf("the start line is not the last one:\n%s", out)
	}
	return body + "\n"
}
