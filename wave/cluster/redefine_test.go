package cluster_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestRedefine: subscriptions, user and server_id change in place, the start, the add's
// time and the offset kept (the wave then resumes from the offset); the same definition
// again changes nothing; another source, another start, a server_id another instance of
// the source reads under, an invalid definition and an unknown instance are refused,
// each naming why, and change nothing.
func TestRedefine(t *testing.T) {
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			orders := wavetest.ValidInstance()
			orders.Start = &cluster.Position{File: "bin.000003", Pos: 4}
			if _, err := cluster.AddInstance(ctx, c, &orders, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			users := wavetest.ValidInstance()
			users.ID, users.Source.ServerID = "users", 202
			if _, err := cluster.AddInstance(ctx, c, &users, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			at := putOffset(t, c, orders.ID)
			if _, err := c.Put(ctx, cluster.OffsetKey(users.ID), []byte(`{"file":"bin.000001","pos":4}`), coord.NoVersion); err != nil {
				t.Fatal(err) // a first start's, committed before a wrong flavor failed
			}

			def := wavetest.ValidInstance() // no start: the stored one stays
			def.Source.User, def.Source.ServerID = "repl2", 303
			def.Subscriptions = append(def.Subscriptions, cluster.Subscription{Name: "b", Topic: "t2", Include: []string{`shop\.orders`}})
			changed, err := cluster.Redefine(ctx, c, &def)
			if err != nil || !changed {
				t.Fatalf("redefine: changed %v, %v", changed, err)
			}
			got, err := cluster.GetInstance(ctx, c, orders.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := def
			want.Start = orders.Start
			if a, b := mustMarshal(t, got), mustMarshal(t, &want); a != b {
				t.Errorf("definition %s, want %s", a, b)
			}
			expectOffset(t, c, orders.ID, at)
			if changed, err := cluster.Redefine(ctx, c, &def); err != nil || changed {
				t.Errorf("the same again: changed %v, %v", changed, err)
			}

			for _, tc := range []struct {
				name string
				edit func(*cluster.Instance)
				want string
			}{
				{"another source", func(i *cluster.Instance) { i.Source.Addr = "127.0.0.1:3309" }, "source 127.0.0.1:3306 (mariadb) would become 127.0.0.1:3309 (mariadb): a redefinition keeps the source"},
				{"another flavor, a GTID set committed", func(i *cluster.Instance) { i.Source.Flavor = cluster.FlavorMySQL }, "flavor mariadb would become mysql, and the committed offset holds a mariadb GTID set (0-1-9)"},
				{"another start", func(i *cluster.Instance) { i.Start = &cluster.Position{File: "bin.000009", Pos: 4} }, "start bin.000009:4 differs from where the instance began (bin.000003:4)"},
				{"a server_id taken", func(i *cluster.Instance) { i.Source.ServerID = 202 }, "server_id 202 is read by instance users already"},
				{"invalid", func(i *cluster.Instance) { i.OnTooLarge = "drop" }, `"on_too_large": "drop": want stop or skip`},
			} {
				bad := def
				tc.edit(&bad)
				if changed, err := cluster.Redefine(ctx, c, &bad); err == nil || changed || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: changed %v, %v; want refused: %q", tc.name, changed, err, tc.want)
				}
			}
			// The same start as stored is no change of it.
			same := def
			same.Start = orders.Start
			if changed, err := cluster.Redefine(ctx, c, &same); err != nil || changed {
				t.Errorf("the stored start given: changed %v, %v", changed, err)
			}
			if got2, err := cluster.GetInstance(ctx, c, orders.ID); err != nil || mustMarshal(t, got2) != mustMarshal(t, &want) {
				t.Errorf("after the refusals: %v, %v; want the definition unchanged", got2, err)
			}
			// A wrong flavor is fixed while the offset is a file and position (users failed at once).
			usersFixed := users
			usersFixed.Source.Flavor = cluster.FlavorMySQL
			if changed, err := cluster.Redefine(ctx, c, &usersFixed); err != nil || !changed {
				t.Errorf("the flavor of an instance without an offset: changed %v, %v; want it changed", changed, err)
			}
			unknown := def
			unknown.ID = "nope"
			if _, err := cluster.Redefine(ctx, c, &unknown); !errors.Is(err, coord.ErrNotFound) {
				t.Errorf("an unknown instance: %v", err)
			}
		})
	}
}
