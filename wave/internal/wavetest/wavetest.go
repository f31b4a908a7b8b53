// Package wavetest holds the test helpers the wave's packages share.
package wavetest

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// ValidInstance is an instance that passes Validate, for tests to change.
func ValidInstance() cluster.Instance {
	return cluster.Instance{ID: "orders", Source: cluster.Source{Addr: "127.0.0.1:3306", User: "repl", Flavor: cluster.FlavorMariaDB, ServerID: 101},
		Subscriptions: []cluster.Subscription{{Name: "a", Topic: "t"}}}
}

// Coordinators are the two real coordinators: they differ in what a half-done add
// leaves (ZooKeeper creates the definition's node empty as the assignment's parent).
func Coordinators(t *testing.T) map[string]func(t *testing.T) coord.Coordinator {
	return map[string]func(t *testing.T) coord.Coordinator{
		"single": func(t *testing.T) coord.Coordinator {
			c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		},
		"zk": func(t *testing.T) coord.Coordinator {
			return openZK(t, fmt.Sprintf("/binlake-test-admin-%d", time.Now().UnixNano()))
		},
	}
}

// Sessions are the two real coordinators as the processes of one cluster see them: each
// call of the function a coordinator's opener returns is another process's session on
// the same store (ZooKeeper: another client of one root; single: its one coordinator,
// which one process holds).
func Sessions(t *testing.T) map[string]func(t *testing.T) func() coord.Coordinator {
	return map[string]func(t *testing.T) func() coord.Coordinator{
		"single": func(t *testing.T) func() coord.Coordinator {
			c := Coordinators(t)["single"](t)
			return func() coord.Coordinator { return c }
		},
		"zk": func(t *testing.T) func() coord.Coordinator {
			root := fmt.Sprintf("/binlake-test-admin-%d", time.Now().UnixNano())
			return func() coord.Coordinator { return openZK(t, root) }
		},
	}
}

func openZK(t *testing.T, root string) coord.Coordinator {
	addr := testenv.Require(t, testenv.ZooKeeper)
	c, err := zk.New(t.Context(), zk.Options{Servers: strings.Split(addr, ","), Root: root, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
