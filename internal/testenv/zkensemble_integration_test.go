package testenv

import (
	"context"
	"testing"
	"time"
)

// TestZKEnsembleIntegration checks the HA tests' tooling end to end: the ensemble has one
// leader, stopping it makes another member leader, and the stopped member rejoins as a
// follower once started again.
func TestZKEnsembleIntegration(t *testing.T) {
	e := RequireZKEnsemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaders := 0
	for m := 1; m <= len(e.Servers); m++ {
		mode, err := e.Mode(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if mode == "leader" {
			leaders++
		} else if mode != "follower" {
			t.Errorf("member %d mode = %q, want leader or follower", m, mode)
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders, want 1", leaders)
	}

	e.KillMember(t, leader)
	if _, err := e.Mode(ctx, leader); err == nil {
		t.Fatalf("member %d still answers srvr after being killed", leader)
	}
	next, err := e.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("member %d is leader again while it is down", next)
	}

	e.StartMember(t, leader)
	mode, err := e.Mode(ctx, leader)
	if err != nil {
		t.Fatalf("restarted member %d: %v", leader, err)
	}
	if mode != "follower" {
		t.Errorf("restarted member %d mode = %q, want follower (member %d leads)", leader, mode, next)
	}
	if err := e.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestZKEnsembleRejectsBadMember(t *testing.T) {
	e := &ZKEnsemble{Servers: []string{"127.0.0.1:2182", "127.0.0.1:2183", "127.0.0.1:2184"}}
	for _, m := range []int{0, 4, -1} {
		if _, err := e.Mode(context.Background(), m); err == nil {
			t.Errorf("Mode(%d) succeeded, want an out-of-range error", m)
		}
	}
}
