package capture

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/internal/testenv/certtest"
	"github.com/binlake/binlake/wave/cluster"
)

// TestSourceOverTLSIntegration: a source user created REQUIRE SSL (as on servers with
// require_secure_transport, and managed MySQL services) is refused in the clear, and
// every connection the wave opens with source.tls goes over TLS: the position's, the
// source check's (with its binlog dump), the snapshot's table listing, and the binlog
// stream and schema reads of a running capture, whose rows arrive. A CA that did not
// sign the server's certificate is refused with words that say what to set.
func TestSourceOverTLSIntegration(t *testing.T) {
	a, ca := testenv.RequireMySQLTLS(t)
	ctx := testenv.Context(t)
	db, exec, _ := testenv.ScratchDatabase(t, "wave_tls")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v VARCHAR(20))")
	user, pw := testenv.TLSOnlyUser(t, exec, "tls", db), testenv.TLSOnlyPassword

	plain := cluster.Source{Addr: a.Addr, User: user, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()}
	_, err := CurrentPosition(ctx, plain, pw)
	if err == nil || !isAccessDenied(err) || !strings.Contains(err.Error(), "set source.tls") {
		t.Fatalf("in the clear: %v; want the server's access denied, with the hint to set source.tls", err)
	}

	other := certtest.New(t, "other-ca")
	wrong := plain
	wrong.TLS = &config.ClientTLS{CAFile: other.CertFile}
	if _, err := CurrentPosition(ctx, wrong, pw); err == nil || !strings.Contains(err.Error(), "must name the CA that signs") {
		t.Fatalf("with a CA that did not sign the server's certificate: %v; want the hint on ca_file", err)
	}

	src := plain
	src.TLS = &config.ClientTLS{CAFile: ca}
	start, err := CurrentPosition(ctx, src, pw)
	if err != nil {
		t.Fatalf("over TLS: %v", err)
	}
	s, err := CheckSource(ctx, src, pw, testenv.ReplicaServerID())
	if err != nil || len(s.Access) > 0 {
		t.Fatalf("the source check over TLS (a binlog dump tried): %v, refused: %v", err, s.Access)
	}
	filter, err := cluster.NewFilter([]cluster.Subscription{{Name: "t", Topic: "t", Include: []string{db + `\.t`}}})
	if err != nil {
		t.Fatal(err)
	}
	if tables, err := SubscribedTables(ctx, src, pw, filter); err != nil || len(tables) != 1 {
		t.Fatalf("the snapshot's listing over TLS: %v, %v; want %s.t", tables, err, db)
	}
	ep, err := EndpointOf(src, pw)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ep.connect(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := conn.Execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.GetString(0, 1); !strings.HasPrefix(v, "TLS") {
		t.Fatalf("the session's Ssl_version is %q: not TLS", v)
	}

	exec("INSERT INTO " + db + ".t VALUES (1, 'over'), (2, 'tls')")
	out := make(chan Item, 64)
	c, err := New(Options{Inst: &cluster.Instance{ID: "tls", Source: src}, Password: pw, Filter: filter, Out: out,
		Log: slog.New(slog.DiscardHandler), BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second,
		EventQueue: 64, Heartbeat: time.Second}, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.sc.close)
	cctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go c.Run(cctx)
	byTable := readMasked(t, out, 2)
	if got := strings.Join(byTable["t"], "\n"); !strings.Contains(got, `"over"`) || !strings.Contains(got, `"tls"`) {
		t.Fatalf("rows read over TLS:\n%s", got)
	}
	if c.ep.TLS == nil {
		t.Fatal("the capture's session endpoint has no TLS")
	}
}
