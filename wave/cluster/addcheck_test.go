package cluster_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestAddRefusesAServerIDClash: AddInstance refuses, naming the instance that has them, a
// second instance that reads the same source (the same addr, its host's case aside) with
// the same server_id: the source keeps one binlog connection per server_id, and the two
// would end each other's for ever. Another source, or another server_id, is fine. Before,
// the second was added, and both flapped at 200 ms.
func TestAddRefusesAServerIDClash(t *testing.T) {
	for _, tc := range []struct {
		name     string
		addr     string
		serverID uint32
		want     string // the error's start; "" = added
	}{
		{"same source, same server_id", "127.0.0.1:3306", 101, "instance users: source 127.0.0.1:3306 with server_id 101 is read by instance orders already"},
		{"same source named in capitals", "DB.example:3306", 101, "instance users: source DB.example:3306 with server_id 101 is read by instance orders already"},
		{"same source, another server_id", "127.0.0.1:3306", 102, ""},
		{"another source, same server_id", "127.0.0.1:3307", 101, ""},
		// localhost resolves to 127.0.0.1 (/etc/hosts): one server under two names.
		{"same source by another name", "localhost:3306", 101, "instance users: source localhost:3306 with server_id 101 is read by instance orders already"},
		{"another name, another port", "localhost:3307", 101, ""},
		// A server on one loopback address at a port most often listens on the other too.
		{"same port on the IPv6 loopback", "[::1]:3306", 101, "instance users: source [::1]:3306 with server_id 101 is read by instance orders already"},
		{"another port on the IPv6 loopback", "[::1]:3307", 101, ""},
		// The dialer reads 03306 as 3306.
		{"same port with a leading zero", "127.0.0.1:03306", 101, "instance users: source 127.0.0.1:03306 with server_id 101 is read by instance orders already"},
	} {
		for name, open := range wavetest.Coordinators(t) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				c := open(t)
				ctx := t.Context()
				orders := wavetest.ValidInstance() // 127.0.0.1:3306, server_id 101
				if strings.HasPrefix(tc.addr, "DB.") {
					orders.Source.Addr = "db.example:3306"
				}
				if _, err := cluster.AddInstance(ctx, c, &orders, "wave-1", nil); err != nil {
					t.Fatal(err)
				}
				users := wavetest.ValidInstance()
				users.ID, users.Source.Addr, users.Source.ServerID = "users", tc.addr, tc.serverID
				checked := cluster.CheckAdd(ctx, c, &users)
				_, err := cluster.AddInstance(ctx, c, &users, "wave-1", nil)
				for what, err := range map[string]error{"CheckAdd": checked, "AddInstance": err} {
					switch {
					case tc.want == "" && err != nil:
						t.Errorf("%s: %v, want none", what, err)
					case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
						t.Errorf("%s: %v, want an error starting %q", what, err, tc.want)
					}
				}
				if _, err := cluster.GetInstance(ctx, c, "users"); (err == nil) != (tc.want == "") {
					t.Errorf("users stored: %v, want stored %v", err == nil, tc.want == "")
				}
			})
		}
	}
}

// TestConcurrentAddsOfOneServerID: adds of several instances with one source and one
// server_id, at once and each from its own process's session, end with one of them added
// and the others refused for the clash. Without the adds' lock each checked before the
// others wrote, and several were stored (then ended each other's binlog connections).
func TestConcurrentAddsOfOneServerID(t *testing.T) {
	const adds = 6
	for name, sessions := range wavetest.Sessions(t) {
		t.Run(name, func(t *testing.T) {
			open := sessions(t)
			var cs []coord.Coordinator
			for range adds {
				cs = append(cs, open())
			}
			ctx := t.Context()
			errs := make([]error, adds)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range adds {
				wg.Go(func() {
					inst := wavetest.ValidInstance()
					inst.ID = fmt.Sprintf("orders-%d", i)
					<-start
					_, errs[i] = cluster.AddInstance(ctx, cs[i], &inst, "wave-1", nil)
				})
			}
			close(start)
			wg.Wait()
			added := 0
			for i, err := range errs {
				switch {
				case err == nil:
					added++
				case !strings.Contains(err.Error(), "with server_id 101 is read by instance orders-"):
					t.Errorf("add of orders-%d: %v, want added or refused for the server_id", i, err)
				}
			}
			ids, err := cluster.ListInstances(ctx, cs[0])
			if err != nil {
				t.Fatal(err)
			}
			if added != 1 || len(ids) != 1 {
				t.Errorf("%d adds succeeded and %d instances are stored (%v), want 1 and 1", added, len(ids), ids)
			}
		})
	}
}
