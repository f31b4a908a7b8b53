package zk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/coordtest"
	"github.com/binlake/binlake/internal/testenv"
)

// testRoot keeps the tests' znodes apart from anything else on the shared server.
const testRoot = "/binlake-test"

const wait = 30 * time.Second

// testLogger is the shared test logger (testenv.Logger).
var testLogger = testenv.Logger

func open(t testing.TB, servers []string, timeout time.Duration) *Coordinator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := New(ctx, Options{Servers: servers, Root: testRoot, SessionTimeout: timeout, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("zk.New(%v): %v", servers, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// uniqueKey is a key no earlier run used: the server outlives test runs.
func uniqueKey(t testing.TB, name string) string {
	return fmt.Sprintf("zktest/%s-%d/%s", strings.NewReplacer("/", "_").Replace(t.Name()), time.Now().UnixNano(), name)
}

func TestZKCoordinatorIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.ZooKeeper)
	coordtest.Run(t, func(t *testing.T) coord.Coordinator {
		return open(t, testenv.HostPorts(addr), 4*time.Second)
	})
}

func TestNewOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no servers", Options{}, "no servers"},
		{"empty server", Options{Servers: []string{" "}}, "empty server address"},
		{"relative root", Options{Servers: []string{"127.0.0.1:1"}, Root: "binlake"}, "must start with a slash"},
		{"bad root", Options{Servers: []string{"127.0.0.1:1"}, Root: "/a//b"}, "empty segment"},
		{"root with two trailing slashes", Options{Servers: []string{"127.0.0.1:1"}, Root: "/a//"}, "trailing slash"},
		{"negative timeout", Options{Servers: []string{"127.0.0.1:1"}, SessionTimeout: -time.Second}, "negative session timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(context.Background(), tc.opts)
			if err == nil {
				_ = c.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error %q, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestNewGivesUpWithContext(t *testing.T) {
	// A port nobody listens on: New must return when ctx ends, naming the servers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := New(ctx, Options{Servers: []string{addr}, Logger: testLogger(t)})
	if err == nil {
		_ = c.Close()
		t.Fatal("New succeeded without a server")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("New error %v, want a deadline error naming %s", err, addr)
	}
}

// TestZKTakeoverOnCloseIntegration: a waiting candidate in another process (coordinator)
// takes over when the leader's coordinator closes, and only after its Lost closed.
func TestZKTakeoverOnCloseIntegration(t *testing.T) {
	addr := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	c1, c2 := open(t, addr, 4*time.Second), open(t, addr, 4*time.Second)
	ctx := ctxT(t)
	key := uniqueKey(t, "instance")

	l1, err := c1.Campaign(ctx, key, []byte("c1"))
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan coord.Leadership, 1)
	go func() {
		l, err := c2.Campaign(ctx, key, []byte("c2"))
		if err != nil {
			t.Errorf("c2 Campaign: %v", err)
		}
		won <- l
	}()
	// c2's candidate is queued behind c1's before c1 goes.
	require.Eventually(t, func() bool {
		names, err := c1.List(ctx, key+"/candidates")
		return err == nil && len(names) == 2
	}, wait, 20*time.Millisecond, "c2's candidate znode")
	requireLeader(t, c2, key, "c1")

	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	var l2 coord.Leadership
	select {
	case l2 = <-won:
	case <-time.After(wait):
		t.Fatal("c2 did not take over after c1 closed")
	}
	if l2 == nil {
		t.FailNow()
	}
	select {
	case <-l1.Lost():
	default:
		t.Fatal("c2 won while c1's Lost was still open")
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("token %d of the successor is not above %d", l2.Token(), l1.Token())
	}
	requireLeader(t, c2, key, "c2")
}

func requireLeader(t *testing.T, c coord.Coordinator, key, want string) {
	t.Helper()
	got, err := c.Leader(ctxT(t), key)
	if err != nil || string(got) != want {
		t.Fatalf("Leader(%s) = %q, %v; want %q", key, got, err, want)
	}
}

// proxy is a TCP relay to a ZooKeeper server that the test can cut in two ways: drop
// (close every connection: the client sees it at once and reconnects) and freeze (relay
// nothing and refuse new connections: a silent partition, which the client notices only
// by its read timeout and the server by its session timeout).
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen bool
	thawed chan struct{} // closed while not frozen
	conns  map[net.Conn]struct{}
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, thawed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.thawed)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.drop() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		frozen := p.frozen
		p.mu.Unlock()
		if frozen {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go p.relay(in, out)
		go p.relay(out, in)
	}
}

func (p *proxy) relay(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed := p.thawed
			p.mu.Unlock()
			<-thawed // while frozen, hold the bytes: they never arrive
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drop closes every relayed connection.
func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
}

func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen = true
		p.thawed = make(chan struct{})
	}
}

// thaw ends a freeze. The frozen connections are closed rather than resumed, as a real
// partition's connections would have timed out; the client dials again.
func (p *proxy) thaw() {
	p.drop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

// TestZKSessionExpiryIntegration partitions a leader from ZooKeeper until its session
// expires. Its Lost must close (on the client's read timeout, 2/3 of the session timeout)
// before the server expires the session and a second coordinator wins (after the full
// timeout); the successor's token is larger. When the partition heals, the first
// coordinator gets a new session, its membership comes back, and it can lead again.
func TestZKSessionExpiryIntegration(t *testing.T) {
	addr := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	px := newProxy(t, addr[0])
	const sessionTimeout = 2 * time.Second
	c1 := open(t, []string{px.addr()}, sessionTimeout)
	c2 := open(t, addr, 4*time.Second)
	ctx := ctxT(t)
	key := uniqueKey(t, "instance")
	group := uniqueKey(t, "waves")

	if err := c1.Register(ctx, group, coord.Member{ID: "wave-1", Data: []byte("c1")}); err != nil {
		t.Fatal(err)
	}
	l1, err := c1.Campaign(ctx, key, []byte("c1"))
	if err != nil {
		t.Fatal(err)
	}
	type win struct {
		l  coord.Leadership
		at time.Time
	}
	won := make(chan win, 1)
	go func() {
		l, err := c2.Campaign(ctx, key, []byte("c2"))
		if err != nil {
			t.Errorf("c2 Campaign: %v", err)
		}
		won <- win{l, time.Now()}
	}()
	require.Eventually(t, func() bool {
		names, err := c2.List(ctx, key+"/candidates")
		return err == nil && len(names) == 2
	}, wait, 20*time.Millisecond, "c2's candidate znode")
	oldSession := c1.conn.SessionID()

	start := time.Now()
	px.freeze()
	var lostAt time.Time
	select {
	case <-l1.Lost():
		lostAt = time.Now()
	case w := <-won:
		t.Fatalf("c2 won %v into the partition while c1's Lost was open", w.at.Sub(start))
	case <-time.After(wait):
		t.Fatal("c1's Lost did not close during the partition")
	}
	var w win
	select {
	case w = <-won:
	case <-time.After(wait):
		t.Fatal("c2 did not win after c1's session expired")
	}
	if w.l == nil {
		t.FailNow()
	}
	t.Logf("partition: c1 lost leadership after %v, c2 won after %v (session timeout %v)",
		lostAt.Sub(start).Round(time.Millisecond), w.at.Sub(start).Round(time.Millisecond), sessionTimeout)
	if !w.at.After(lostAt) {
		t.Fatalf("c2 won at %v, not after c1 lost at %v", w.at.Sub(start), lostAt.Sub(start))
	}
	if w.l.Token() <= l1.Token() {
		t.Fatalf("successor token %d is not above %d", w.l.Token(), l1.Token())
	}
	requireLeader(t, c2, key, "c2")
	// The expired session's membership is gone…
	require.Eventually(t, func() bool {
		ms, err := c2.Members(ctx, group)
		return err == nil && len(ms) == 0
	}, wait, 20*time.Millisecond, "wave-1 to leave with the expired session")

	// …and comes back when c1 reconnects on a new session.
	px.thaw()
	require.Eventually(t, func() bool {
		ms, err := c2.Members(ctx, group)
		return err == nil && len(ms) == 1 && ms[0].ID == "wave-1" && string(ms[0].Data) == "c1"
	}, wait, 20*time.Millisecond, "wave-1 to be re-registered on c1's new session")
	if s := c1.conn.SessionID(); s == oldSession || s == 0 {
		t.Fatalf("c1 session %#x after expiry, want a new one (old %#x)", s, oldSession)
	}

	// c1 can campaign again: it waits behind c2 and wins when c2 resigns.
	again := make(chan coord.Leadership, 1)
	go func() {
		l, err := c1.Campaign(ctx, key, []byte("c1 again"))
		if err != nil {
			t.Errorf("c1 second Campaign: %v", err)
		}
		again <- l
	}()
	require.Eventually(t, func() bool {
		names, err := c2.List(ctx, key+"/candidates")
		return err == nil && len(names) == 2
	}, wait, 20*time.Millisecond, "c1's new candidate znode")
	if err := w.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l3 := <-again:
		if l3 == nil {
			t.FailNow()
		}
		if l3.Token() <= w.l.Token() {
			t.Fatalf("token %d after re-election is not above %d", l3.Token(), w.l.Token())
		}
	case <-time.After(wait):
		t.Fatal("c1 did not lead again after c2 resigned")
	}
	requireLeader(t, c2, key, "c1 again")
}

// TestZKDisconnectLosesLeadershipIntegration cuts the leader's connection without
// expiring its session. Lost closes at once (the coordinator cannot know the session
// survives), and on reconnection the coordinator removes its stale znodes so a waiting
// candidate takes over instead of waiting for a session that stays alive. The membership,
// owned by the surviving session, stays.
func TestZKDisconnectLosesLeadershipIntegration(t *testing.T) {
	addr := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	px := newProxy(t, addr[0])
	c1 := open(t, []string{px.addr()}, 20*time.Second)
	c2 := open(t, addr, 4*time.Second)
	ctx := ctxT(t)
	key := uniqueKey(t, "instance")
	group := uniqueKey(t, "waves")

	if err := c1.Register(ctx, group, coord.Member{ID: "wave-1"}); err != nil {
		t.Fatal(err)
	}
	l1, err := c1.Campaign(ctx, key, []byte("c1"))
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan coord.Leadership, 1)
	go func() {
		l, err := c2.Campaign(ctx, key, []byte("c2"))
		if err != nil {
			t.Errorf("c2 Campaign: %v", err)
		}
		won <- l
	}()
	require.Eventually(t, func() bool {
		names, err := c2.List(ctx, key+"/candidates")
		return err == nil && len(names) == 2
	}, wait, 20*time.Millisecond, "c2's candidate znode")
	session := c1.conn.SessionID()

	px.drop()
	select {
	case <-l1.Lost():
	case <-time.After(wait):
		t.Fatal("Lost did not close when the connection dropped")
	}
	var l2 coord.Leadership
	select {
	case l2 = <-won:
	case <-time.After(wait):
		t.Fatal("c2 did not take over after c1 reconnected (stale znodes left behind?)")
	}
	if l2 == nil {
		t.FailNow()
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("successor token %d is not above %d", l2.Token(), l1.Token())
	}
	if s := c1.conn.SessionID(); s != session {
		t.Fatalf("session changed from %#x to %#x: the drop was meant to keep it", session, s)
	}
	ms, err := c2.Members(ctx, group)
	if err != nil || len(ms) != 1 || ms[0].ID != "wave-1" {
		t.Fatalf("members after the reconnect: %v, %v; want wave-1 still there", ms, err)
	}
	// Resigning the lost leadership must not touch the successor's znodes.
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	requireLeader(t, c2, key, "c2")
	select {
	case <-l2.Lost():
		t.Fatal("the successor lost leadership when the old leader resigned")
	default:
	}
}

// TestZKLeaderZnodeDeletedIntegration: deleting the key under a leader (an operator's
// hand) ends its leadership.
func TestZKLeaderZnodeDeletedIntegration(t *testing.T) {
	addr := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	c := open(t, addr, 4*time.Second)
	ctx := ctxT(t)
	key := uniqueKey(t, "instance")
	l, err := c.Campaign(ctx, key, []byte("me"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, key, coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(wait):
		t.Fatal("Lost did not close when the leader znode was deleted")
	}
	l2, err := c.Campaign(ctx, key, []byte("again"))
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= l.Token() {
		t.Fatalf("token %d is not above %d", l2.Token(), l.Token())
	}
}

// TestZKDeleteWhileNodesAppearIntegration: a node created in a subtree while Delete
// removes it (a wave campaigning for an instance being removed creates its candidate, and
// the candidates' parent again) does not fail the delete with "node has children" at any
// depth: the subtree is listed again and deleted whole.
func TestZKDeleteWhileNodesAppearIntegration(t *testing.T) {
	addr := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	c := open(t, addr, 4*time.Second)
	ctx := ctxT(t)
	key := uniqueKey(t, "instance")
	for _, k := range []string{key + "/offset", key + "/leader/candidates/c1", key + "/leader/leader"} {
		if _, err := c.Put(ctx, k, []byte("x"), coord.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	cands := c.zpath(key + "/leader/candidates")
	var created []string
	testHookDeleted = func(p string) {
		var add string
		switch p {
		case cands + "/c1": // a candidate in the directory being emptied
			add = cands + "/c2"
		case cands: // the directory itself, made again for a new candidate
			add = cands + "/c3"
		default:
			return
		}
		if slices.Contains(created, add) {
			return // once: a campaigner that keeps coming back is a wave still running the instance
		}
		if _, err := c.create(add, nil, 0); err != nil {
			t.Errorf("create %s: %v", add, err)
		}
		created = append(created, add)
	}
	defer func() { testHookDeleted = nil }()
	if err := c.Delete(ctx, key, coord.AnyVersion); err != nil {
		t.Fatalf("delete while nodes appear under it: %v", err)
	}
	if len(created) != 2 {
		t.Errorf("the test created %v under the key during the delete, want c2 and c3", created)
	}
	if _, err := c.Get(ctx, key); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("after the delete, Get = %v, want ErrNotFound", err)
	}
}

// TestZKEnsembleLeaderFailureIntegration writes values through the three-member ensemble,
// kills the ensemble's leader, and reads them back through the survivors; then it restarts
// the member and reads them, and a value written while it was down, through it alone.
func TestZKEnsembleLeaderFailureIntegration(t *testing.T) {
	e := testenv.RequireZKEnsemble(t)
	ctx := ctxT(t)
	c := open(t, e.Servers, 10*time.Second)

	want := map[string]string{}
	base := uniqueKey(t, "offsets")
	for i := range 5 {
		k := fmt.Sprintf("%s/i%d", base, i)
		v := fmt.Sprintf(`{"file":"bin.%06d","pos":%d}`, i+1, 4+i)
		if _, err := c.Put(ctx, k, []byte(v), coord.NoVersion); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}

	leader, err := e.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing member %d, the ensemble's leader", leader)
	killed := time.Now()
	e.KillMember(t, leader)
	var survivors []string
	for m := 1; m <= len(e.Servers); m++ {
		if m != leader {
			survivors = append(survivors, e.Servers[m-1])
		}
	}

	// The same client fails over; a new one connects to the survivors only.
	fresh := open(t, survivors, 10*time.Second)
	for _, cc := range []*Coordinator{c, fresh} {
		for k, v := range want {
			got := getEventually(t, cc, k)
			if string(got.Data) != v {
				t.Fatalf("after the leader died, %s = %q, want %q", k, got.Data, v)
			}
		}
	}
	t.Logf("committed values readable again %v after the leader was killed", time.Since(killed).Round(time.Millisecond))

	// A write accepted by the surviving majority.
	during := base + "/during-outage"
	putEventually(t, fresh, during, "written with one member down")
	want[during] = "written with one member down"

	e.StartMember(t, leader)
	if err := e.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	alone := open(t, []string{e.Servers[leader-1]}, 10*time.Second)
	for k, v := range want {
		got := getEventually(t, alone, k)
		if string(got.Data) != v {
			t.Fatalf("restarted member has %s = %q, want %q", k, got.Data, v)
		}
	}
	_ = c.Delete(ctx, base, coord.AnyVersion)
}

// getEventually reads key, retrying while the ensemble elects a leader or the client
// fails over; ErrNotFound is an answer, and a failure.
func getEventually(t *testing.T, c *Coordinator, key string) coord.Value {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		v, err := c.Get(ctxT(t), key)
		if err == nil {
			return v
		}
		if errors.Is(err, coord.ErrNotFound) {
			t.Fatalf("Get(%s): a committed value is missing: %v", key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get(%s) kept failing for %v: %v", key, wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func putEventually(t *testing.T, c *Coordinator, key, val string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		// AnyVersion: a retried create whose first answer was lost must not fail.
		_, err := c.Put(ctxT(t), key, []byte(val), coord.AnyVersion)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Put(%s) kept failing for %v: %v", key, wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestSeq(t *testing.T) {
	tests := []struct {
		name string
		want int64
		ok   bool
	}{
		{"c-abc-0000000012", 12, true},
		{"c-0123456789abcdef-2147483647", 2147483647, true},
		{"short", 0, false},
		{"c-abc-00000000x2", 0, false},
	}
	for _, tc := range tests {
		got, ok := seq(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("seq(%q) = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestZKUnreachableIntegration cuts the coordinator off from ZooKeeper with work in
// flight: calls must end with their ctx, a leader must lose, and Close must return.
func TestZKUnreachableIntegration(t *testing.T) {
	addr := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	px := newProxy(t, addr[0])
	c := open(t, []string{px.addr()}, 2*time.Second)
	ctx := ctxT(t)
	key := uniqueKey(t, "instance")
	group := uniqueKey(t, "waves")
	if err := c.Register(ctx, group, coord.Member{ID: "m"}); err != nil {
		t.Fatal(err)
	}
	watch, err := c.WatchMembers(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	<-watch
	l, err := c.Campaign(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}

	px.freeze()
	select {
	case <-l.Lost():
	case <-time.After(wait):
		t.Fatal("Lost did not close while ZooKeeper was unreachable")
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := c.Get(short, key); !errors.Is(err, context.DeadlineExceeded) && !transient(err) {
		t.Fatalf("Get while unreachable: %v, want a deadline or connection error", err)
	}
	if _, err := c.Campaign(short, key+"-other", nil); err == nil {
		t.Fatal("Campaign succeeded while ZooKeeper was unreachable")
	}

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Close hung while ZooKeeper was unreachable")
	}
	select {
	case _, ok := <-watch:
		if ok {
			for range watch {
			}
		}
	case <-time.After(wait):
		t.Fatal("the member watch did not end with Close")
	}
}

// TestZKReadSurvivesADroppedConnectionIntegration drops the connection under reads in
// flight, as a stalled server does when the client's read timeout fires. The client fails
// the pending requests with ErrConnectionClosed and reconnects within the session: the
// reads must answer from the new connection instead of failing (a `binlake instance show`
// must not fail on a one-second stall).
func TestZKReadSurvivesADroppedConnectionIntegration(t *testing.T) {
	addr := testenv.HostPorts(testenv.Require(t, testenv.ZooKeeper))
	px := newProxy(t, addr[0])
	c := open(t, []string{px.addr()}, 4*time.Second)
	ctx := ctxT(t)
	key, group := uniqueKey(t, "value"), uniqueKey(t, "waves")
	if _, err := c.Put(ctx, key, []byte("v"), coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, group, coord.Member{ID: "m", Data: []byte("d")}); err != nil {
		t.Fatal(err)
	}

	px.freeze() // the reads below are sent and held
	type answer struct {
		what string
		err  error
	}
	answers := make(chan answer, 3)
	go func() { v, err := c.Get(ctx, key); answers <- answer{"Get = " + string(v.Data), err} }()
	go func() { ms, err := c.Members(ctx, group); answers <- answer{fmt.Sprintf("Members = %d", len(ms)), err} }()
	go func() { ks, err := c.List(ctx, group); answers <- answer{fmt.Sprintf("List = %v", ks), err} }()
	time.Sleep(500 * time.Millisecond) // the reads are in flight: what is under test is their fate
	px.thaw()                          // closes the held connections: ErrConnectionClosed for each
	for range 3 {
		a := <-answers
		if a.err != nil {
			t.Errorf("%s: %v, want an answer after the client reconnected", a.what, a.err)
		}
	}
}

// The client's failure to reach a server, which it says every second while it retries,
// is logged once and then once every repeatEvery with how often it came since; another
// failure, or a server's, is logged at once.
func TestZKLoggerSaysARepeatedFailureOnce(t *testing.T) {
	var buf bytes.Buffer
	l := newZKLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	for range 5 {
		l.Printf("failed to connect to %s: refused", "zk-1:2181")
		l.Printf("failed to connect to %s: refused", "zk-2:2181")
	}
	l.Printf("connected to %s", "zk-3:2181") // routine: debug
	if got := strings.Count(buf.String(), "level=WARN"); got != 2 {
		t.Fatalf("%d warnings, want one per server:\n%s", got, buf.String())
	}
	l.said["failed to connect to zk-1:2181: refused"].at = time.Now().Add(-repeatEvery)
	l.Printf("failed to connect to %s: refused", "zk-1:2181")
	if !strings.Contains(buf.String(), "times_since_last_said=4") {
		t.Fatalf("the repeat after %s does not say how often it came:\n%s", repeatEvery, buf.String())
	}
}

// TestCheckRootTakesWhatItSuggests: a root with one trailing slash is the root without
// it, and the example a relative root is given is one CheckRoot takes ("binlake/" was
// told e.g. "/binlake/", which it then refused for the trailing slash).
func TestCheckRootTakesWhatItSuggests(t *testing.T) {
	for _, root := range []string{"/binlake/", "/a/b/", "/binlake", "/"} {
		if err := CheckRoot(root); err != nil {
			t.Errorf("CheckRoot(%q): %v", root, err)
		}
	}
	for _, root := range []string{"binlake/", "a/b/", "binlake"} {
		err := CheckRoot(root)
		if err == nil {
			t.Fatalf("CheckRoot(%q) took a relative root", root)
		}
		_, ex, _ := strings.Cut(err.Error(), "e.g. ")
		example, uerr := strconv.Unquote(ex)
		if uerr != nil || CheckRoot(example) != nil {
			t.Errorf("CheckRoot(%q): %v: its example %s is not a root CheckRoot takes", root, err, ex)
		}
	}
}
