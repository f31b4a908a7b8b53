package testenv

import (
	"testing"
)

func TestContext(t *testing.T) {
	var sub interface{ Err() error }
	t.Run("bounded", func(t *testing.T) {
		ctx := Context(t)
		sub = ctx
		dl, ok := t.Deadline()
		cdl, cok := ctx.Deadline()
		switch {
		case !ok && cok:
			t.Fatalf("go test runs without -timeout, yet the context ends at %s", cdl)
		case ok && !cok:
			t.Fatalf("the test binary stops at %s, the context has no deadline", dl)
		case ok && !cdl.Before(dl):
			t.Fatalf("the context ends at %s, not before the binary's timeout at %s", cdl, dl)
		}
		if err := ctx.Err(); err != nil {
			t.Fatalf("the context ended while the test runs: %v", err)
		}
	})
	if sub.Err() == nil {
		t.Fatal("the context outlived its test")
	}
}
