package cluster_test

import (
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

func TestInstanceValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*cluster.Instance)
		want string
	}{
		{"id", func(i *cluster.Instance) { i.ID = "a/b" }, `field "id": "a/b"`},
		{"addr", func(i *cluster.Instance) { i.Source.Addr = "host" }, "source.addr"},
		// It passed net.SplitHostPort (host "repl@127.0.0.1") and failed at the first dial.
		{"addr with user", func(i *cluster.Instance) { i.Source.Addr = "repl@127.0.0.1:3306" }, `field "source.addr": "repl@127.0.0.1:3306": want host:port, without a user or password`},
		{"port out of range", func(i *cluster.Instance) { i.Source.Addr = "127.0.0.1:70000" }, `field "source.addr": "127.0.0.1:70000": port "70000": want a number from 1 to 65535`},
		{"port not a number", func(i *cluster.Instance) { i.Source.Addr = "db:mysql" }, `field "source.addr": "db:mysql": port "mysql": want a number from 1 to 65535`},
		{"user", func(i *cluster.Instance) { i.Source.User = "" }, "source.user"},
		{"flavor", func(i *cluster.Instance) { i.Source.Flavor = "postgres" }, "source.flavor"},
		{"server id", func(i *cluster.Instance) { i.Source.ServerID = 0 }, "source.server_id"},
		{"password sources", func(i *cluster.Instance) { i.Source.PasswordEnv, i.Source.PasswordFile = "X", "/f" }, "password_env"},
		{"tls half a client pair", func(i *cluster.Instance) { i.Source.TLS = &config.ClientTLS{CertFile: "/c.pem"} }, `field "source.tls.key_file": required with cert_file`},
		{"tls ca and skip", func(i *cluster.Instance) {
			i.Source.TLS = &config.ClientTLS{CAFile: "/ca.pem", InsecureSkipVerify: true}
		}, `field "source.tls.insecure_skip_verify"`},
		{"start", func(i *cluster.Instance) { i.Start = &cluster.Position{} }, "start"},
		{"too large", func(i *cluster.Instance) { i.OnTooLarge = "drop" }, "on_too_large"},
		{"unreadable", func(i *cluster.Instance) { i.OnUnreadable = "ignore" }, "on_unreadable"},
		{"snapshot chunk", func(i *cluster.Instance) { i.Snapshot = &cluster.SnapshotOptions{ChunkRows: -5} }, `field "snapshot.chunk_rows": -5`},
		{"no subscriptions", func(i *cluster.Instance) { i.Subscriptions = nil }, "subscriptions"},
		{"bad subscription", func(i *cluster.Instance) { i.Subscriptions[0].Include = []string{"("} }, `field "subscriptions[0].include[0]": "("`},
		{"duplicate name", func(i *cluster.Instance) { i.Subscriptions = append(i.Subscriptions, i.Subscriptions[0]) }, `field "subscriptions[1].name": "a": used twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := wavetest.ValidInstance()
			tc.mod(&in)
			err := in.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	in := wavetest.ValidInstance()
	// The TLS files are read on the waves' hosts: a definition naming files absent here
	// is valid, and is stored with its tls block.
	in.Source.TLS = &config.ClientTLS{CAFile: "/nowhere/ca.pem", ServerName: "db.internal"}
	data, _ := in.Marshal()
	back, err := cluster.ParseInstance(data)
	if err != nil || back.ID != "orders" || back.Source.TLS == nil || *back.Source.TLS != *in.Source.TLS {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if _, err := cluster.ParseInstance([]byte(`{"id":"x","extra":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
}
