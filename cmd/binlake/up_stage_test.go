//go:build !agentonly

package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStage(t *testing.T) {
	boom := errors.New("boom")
	waitCtx := func(ctx context.Context) error { <-ctx.Done(); return nil }
	for _, tc := range []struct {
		name  string
		parts map[string]func(context.Context) error
		want  string // the error stop returns; "" for nil
	}{
		{"clean stop", map[string]func(context.Context) error{"a": waitCtx, "b": waitCtx}, ""},
		{"a failure stops the others", map[string]func(context.Context) error{"a": waitCtx, "b": func(context.Context) error { return boom }}, "b: boom"},
		{"returning early is a failure", map[string]func(context.Context) error{"a": waitCtx, "b": func(context.Context) error { return nil }}, "b: stopped unexpectedly"},
		{"a part that never stops", map[string]func(context.Context) error{"a": func(context.Context) error { select {} }}, "shutdown: the parts did not stop within 50ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStage(context.Background())
			for name, p := range tc.parts {
				s.run(name, p)
			}
			if tc.want != "" && !strings.HasPrefix(tc.want, "shutdown") {
				select {
				case <-s.ctx.Done(): // the failure ended the stage by itself
				case <-time.After(5 * time.Second):
					t.Fatal("a failing part did not end its stage")
				}
			}
			deadline := time.NewTimer(50 * time.Millisecond)
			defer deadline.Stop()
			err := s.stop(deadline.C, 50*time.Millisecond)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("stop: %q, want %q", got, tc.want)
			}
		})
	}
}
