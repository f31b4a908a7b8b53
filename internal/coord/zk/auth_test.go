package zk

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/coordtest"
	"github.com/binlake/binlake/internal/testenv"
)

const (
	authUser     = "binlake-test"
	authPassword = "digest-secret-4711"
)

// openAuth is open with digest credentials, under root.
func openAuth(t testing.TB, servers []string, root string, auth *DigestAuth) (*Coordinator, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := New(ctx, Options{Servers: servers, Root: root, SessionTimeout: 4 * time.Second, Logger: testLogger(t), Auth: auth})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, nil
}

// rawConn is a plain client, authenticated with creds ("user:password") unless empty.
func rawConn(t testing.TB, servers []string, creds string) *gozk.Conn {
	t.Helper()
	conn, _, err := gozk.Connect(servers, 4*time.Second, gozk.WithLogInfo(false), gozk.WithLogger(newZKLogger(testLogger(t))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.Now().Add(wait)
	for conn.State() != gozk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatal("no session")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if creds != "" {
		if err := conn.AddAuth("digest", []byte(creds)); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// removeTree deletes p and everything below it, as the authenticated conn.
func removeTree(conn *gozk.Conn, p string) error {
	children, _, err := conn.Children(p)
	if errors.Is(err, gozk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		if err := removeTree(conn, path.Join(p, ch)); err != nil {
			return err
		}
	}
	if err := conn.Delete(p, -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
		return err
	}
	return nil
}

// TestZKDigestACLIntegration: with Auth, every node the coordinator creates (values, their
// parents, members, candidates, leaders) admits only its user: a client without
// credentials or with a wrong password can neither read, list, write nor create under
// them, while another coordinator with the same credentials can.
func TestZKDigestACLIntegration(t *testing.T) {
	servers := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	root := fmt.Sprintf("%s-auth-%d", testRoot, time.Now().UnixNano())
	owner := rawConn(t, servers, authUser+":"+authPassword)
	t.Cleanup(func() {
		if err := removeTree(owner, root); err != nil {
			t.Errorf("remove %s: %v", root, err)
		}
	})
	ctx := ctxT(t)
	auth := &DigestAuth{Username: authUser, Password: authPassword}
	c, err := openAuth(t, servers, root, auth)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "a/b", []byte("v1"), coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithCancel(ctx)
	defer mcancel()
	if err := c.Register(mctx, "waves", coord.Member{ID: "w1", Data: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "lead", nil, coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	l, err := c.Campaign(ctx, "lead", []byte("me"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)

	nodes := []string{root, root + "/a", root + "/a/b", root + "/waves", root + "/waves/w1", root + "/lead", root + "/lead/leader", root + "/lead/candidates"}
	for _, p := range nodes {
		acl, _, err := owner.GetACL(p)
		if err != nil {
			t.Fatalf("GetACL %s: %v", p, err)
		}
		if len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, authUser+":") || acl[0].Perms != gozk.PermAll {
			t.Errorf("%s: ACL %+v, want digest %s with all permissions only", p, acl, authUser)
		}
	}

	for name, creds := range map[string]string{"anonymous": "", "wrong password": authUser + ":not-it"} {
		t.Run(name, func(t *testing.T) {
			other := rawConn(t, servers, creds)
			for _, p := range nodes {
				if _, _, err := other.Get(p); !errors.Is(err, gozk.ErrNoAuth) {
					t.Errorf("Get %s: %v, want ErrNoAuth", p, err)
				}
				if _, _, err := other.Children(p); !errors.Is(err, gozk.ErrNoAuth) {
					t.Errorf("Children %s: %v, want ErrNoAuth", p, err)
				}
				if _, err := other.Set(p, []byte("x"), -1); !errors.Is(err, gozk.ErrNoAuth) {
					t.Errorf("Set %s: %v, want ErrNoAuth", p, err)
				}
				if _, err := other.Create(p+"/intruder", nil, 0, gozk.WorldACL(gozk.PermAll)); !errors.Is(err, gozk.ErrNoAuth) {
					t.Errorf("Create under %s: %v, want ErrNoAuth", p, err)
				}
			}
			if err := other.Delete(root+"/a/b", -1); !errors.Is(err, gozk.ErrNoAuth) {
				t.Errorf("Delete %s/a/b: %v, want ErrNoAuth", root, err)
			}
		})
	}

	t.Run("coordinator without auth", func(t *testing.T) {
		anon, err := openAuth(t, servers, root, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = anon.Get(ctx, "a/b")
		if err == nil || !strings.Contains(err.Error(), "ACL does not admit this client (coordinator.auth") {
			t.Fatalf("Get without auth: %v, want an error naming coordinator.auth", err)
		}
		if _, err := anon.Put(ctx, "a/c", []byte("x"), coord.NoVersion); err == nil {
			t.Fatal("Put without auth succeeded")
		}
	})
	t.Run("coordinator with a wrong password", func(t *testing.T) {
		wrong, err := openAuth(t, servers, root, &DigestAuth{Username: authUser, Password: "not-it"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = wrong.Get(ctx, "a/b")
		if err == nil || !errors.Is(err, gozk.ErrNoAuth) {
			t.Fatalf("Get with a wrong password: %v, want ErrNoAuth", err)
		}
		if strings.Contains(err.Error(), "not-it") {
			t.Fatalf("error shows the password: %v", err)
		}
	})
	t.Run("second coordinator with the credentials", func(t *testing.T) {
		c2, err := openAuth(t, servers, root, auth)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c2.Get(ctx, "a/b")
		if err != nil || string(v.Data) != "v1" {
			t.Fatalf("Get: %q, %v", v.Data, err)
		}
		if _, err := c2.Put(ctx, "a/b", []byte("v2"), v.Version); err != nil {
			t.Fatal(err)
		}
		ms, err := c2.Members(ctx, "waves")
		if err != nil || len(ms) != 1 || ms[0].ID != "w1" {
			t.Fatalf("Members: %+v, %v", ms, err)
		}
		data, err := c2.Leader(ctx, "lead")
		if err != nil || string(data) != "me" {
			t.Fatalf("Leader: %q, %v", data, err)
		}
	})
}

// TestZKCoordinatorDigestIntegration runs the conformance suite with digest ACLs.
func TestZKCoordinatorDigestIntegration(t *testing.T) {
	servers := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	root := fmt.Sprintf("%s-authsuite-%d", testRoot, time.Now().UnixNano())
	owner := rawConn(t, servers, authUser+":"+authPassword)
	t.Cleanup(func() {
		if err := removeTree(owner, root); err != nil {
			t.Errorf("remove %s: %v", root, err)
		}
	})
	coordtest.Run(t, func(t *testing.T) coord.Coordinator {
		c, err := openAuth(t, servers, root, &DigestAuth{Username: authUser, Password: authPassword})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

func TestDigestAuthOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		auth *DigestAuth
		want string
	}{
		{&DigestAuth{Password: "p"}, `auth: username ""`},
		{&DigestAuth{Username: "a:b", Password: "p"}, `without ':'`},
		{&DigestAuth{Username: "u"}, "auth: empty password"},
	} {
		_, err := New(context.Background(), Options{Servers: []string{"127.0.0.1:1"}, Auth: tc.auth})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %+v: %v, want %q", tc.auth, err, tc.want)
		}
	}
	if s := fmt.Sprintf("%v %+v %#v", DigestAuth{Username: "u", Password: "pw-9"}, &DigestAuth{Password: "pw-9"}, DigestAuth{Password: "pw-9"}); strings.Contains(s, "pw-9") {
		t.Errorf("DigestAuth prints its password: %s", s)
	}
}

// TestZKDigestReconnectIntegration: the credentials outlive the connection and the session.
// After a dropped connection (same session) and after an expiry (a new session, whose
// registrations the coordinator re-creates), the coordinator still reads and writes its
// digest-protected nodes.
func TestZKDigestReconnectIntegration(t *testing.T) {
	servers := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	root := fmt.Sprintf("%s-authre-%d", testRoot, time.Now().UnixNano())
	owner := rawConn(t, servers, authUser+":"+authPassword)
	t.Cleanup(func() {
		if err := removeTree(owner, root); err != nil {
			t.Errorf("remove %s: %v", root, err)
		}
	})
	auth := &DigestAuth{Username: authUser, Password: authPassword}
	px := newProxy(t, servers[0])
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := New(ctx, Options{Servers: []string{px.addr()}, Root: root, SessionTimeout: 2 * time.Second, Logger: testLogger(t), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	watcher, err := openAuth(t, servers, root, auth)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "k", []byte("v0"), coord.NoVersion); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, "waves", coord.Member{ID: "w1"}); err != nil {
		t.Fatal(err)
	}

	px.drop()
	putEventually(t, c, "k", "v1")
	if v := getEventually(t, c, "k"); string(v.Data) != "v1" {
		t.Fatalf("after reconnecting: %q", v.Data)
	}

	old := c.conn.SessionID()
	px.freeze()
	require.Eventually(t, func() bool {
		ms, err := watcher.Members(ctx, "waves")
		return err == nil && len(ms) == 0
	}, wait, 20*time.Millisecond, "the session to expire")
	px.thaw()
	require.Eventually(t, func() bool {
		ms, err := watcher.Members(ctx, "waves")
		return err == nil && len(ms) == 1 && c.conn.SessionID() != old
	}, wait, 20*time.Millisecond, "the member to be re-registered on a new session")
	putEventually(t, c, "k", "v2")
	acl, _, err := owner.GetACL(root + "/waves/w1")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" {
		t.Fatalf("re-created member's ACL: %+v, %v", acl, err)
	}
}
