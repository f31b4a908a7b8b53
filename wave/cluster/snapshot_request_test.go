package cluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
	"github.com/binlake/binlake/wave/rowenc"
)

// TestRequestSnapshot: `binlake instance snapshot` stores a request the leader finds, on
// both coordinators, and refuses what no snapshot could do.
func TestRequestSnapshot(t *testing.T) {
	for name, open := range wavetest.Coordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := wavetest.ValidInstance()
			inst.Subscriptions = []cluster.Subscription{
				{Name: "shop", Topic: "shop", Include: []string{`shop\..*`}},
				{Name: "deletes", Topic: "del", Include: []string{`audit\..*`}, Events: []string{rowenc.TypeDelete}},
			}
			if _, err := cluster.AddInstance(ctx, c, &inst, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				id     string
				tables []string
				err    string
			}{
				{"nope", nil, "not found"},
				{inst.ID, []string{"shop"}, `table "shop": want db.table`},
				{inst.ID, []string{"other.t"}, `"other.t" is in no subscription`},
				{inst.ID, []string{"audit.t"}, `"audit.t" is in no subscription of instance "orders" that takes inserts`},
			} {
				if _, err := cluster.RequestSnapshot(ctx, c, tc.id, tc.tables); err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("RequestSnapshot(%s, %v): %v, want %q", tc.id, tc.tables, err, tc.err)
				}
			}
			if _, ok, err := cluster.ReadSnapshotRequest(ctx, c, inst.ID); ok || err != nil {
				t.Fatalf("a refused request was stored (ok %v, err %v)", ok, err)
			}
			first, err := cluster.RequestSnapshot(ctx, c, inst.ID, []string{"shop.orders"})
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := cluster.ReadSnapshotRequest(ctx, c, inst.ID)
			if err != nil || !ok || got.ID != first.ID || fmt.Sprint(got.Tables) != "[shop.orders]" {
				t.Fatalf("stored request %+v (ok %v, err %v), want %+v", got, ok, err, first)
			}
			second, err := cluster.RequestSnapshot(ctx, c, inst.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if second.ID == first.ID {
				t.Fatalf("two requests share the id %s: the leader would not run the second", first.ID)
			}
		})
	}
}
