// Package zk is the distributed coordinator: ZooKeeper through go-zookeeper/zk.
//
// Layout under Options.Root (default /binlake), key k at Root/k:
//
//	<group>/<member id>            ephemeral, the member's data         (Register)
//	<key>/candidates/c-<guid>-<seq> ephemeral sequential, one per candidate (Campaign)
//	<key>/leader                    ephemeral, the leader's data; its czxid is the token
//	<key>                           a regular znode; its version is the value's version
//
// Leadership is the standard recipe: each candidate creates an ephemeral sequential node,
// the lowest one leads, the others watch their predecessor (no herd effect).
//
// Unlike coord/single, znodes nest: the parents of a key (and a key someone campaigned on)
// exist as empty values of version 0, so creating them with NoVersion conflicts; List of a
// campaigned key shows "candidates" and "leader". Write a key before campaigning on it.
package zk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/internal/keypath"
)

var _ coord.Coordinator = (*Coordinator)(nil)

// DefaultRoot is the root znode when Options.Root is empty.
const DefaultRoot = "/binlake"

// DefaultSessionTimeout is the session timeout asked for when Options.SessionTimeout is 0.
const DefaultSessionTimeout = 10 * time.Second

// Options configures the ZooKeeper coordinator.
type Options struct {
	// Servers are the ensemble's host:port addresses.
	Servers []string
	// Root is the znode every key lives under; DefaultRoot when empty.
	Root string
	// SessionTimeout is the session timeout asked of the server (which may adjust it to its
	// min/max); DefaultSessionTimeout when 0. A leader that loses its connection loses its
	// leadership at once, and its successor waits for this long before it can win.
	SessionTimeout time.Duration
	// Logger receives the coordinator's and the ZooKeeper client's logs; slog.Default() when nil.
	Logger *slog.Logger
	// Auth, when set, authenticates the session with the digest scheme (also after every
	// reconnection) and gives every znode the coordinator creates an ACL that admits this
	// user only (all permissions): other clients can neither read nor change them. Nodes
	// that exist already keep their ACL. Without Auth the nodes are open to all (world).
	Auth *DigestAuth
}

// DigestAuth is a ZooKeeper digest identity. ZooKeeper receives it as sent (no TLS here):
// keep the ensemble on a trusted network.
type DigestAuth struct {
	Username string
	// Password prints as "***" everywhere.
	Password config.Secret
}

// Coordinator is a coord.Coordinator on ZooKeeper. Its methods are safe for concurrent use.
type Coordinator struct {
	conn    *gozk.Conn
	root    string
	log     *slog.Logger
	acl     []gozk.ACL
	timeout time.Duration // the session timeout asked for

	done     chan struct{} // closed by Close
	sessions chan struct{} // 1-buffered: "a session was (re-)established, reconcile"
	wg       sync.WaitGroup

	mu        sync.Mutex // never held across a ZooKeeper call: the client's event callback takes it
	closed    bool
	connected bool   // the client has a live session right now
	epoch     uint64 // bumped on every disconnection or expiry
	session   int64  // the session the reconciler last saw
	recreate  bool   // registrations still to re-create on the current session
	held      map[*leadership]struct{}
	cleanups  []*cleanup
	regs      map[string]*registration // member znode path → live registration
}

// CheckRoot checks a root path (Options.Root; empty is DefaultRoot): absolute, and a
// path ZooKeeper accepts, with one trailing slash allowed ("/binlake/" is "/binlake": a
// relative "binlake/" was told e.g. "/binlake/", which this then refused). The roles'
// --check runs it, so that it refuses what New would.
func CheckRoot(root string) error {
	if root == "" || root == "/" {
		return nil
	}
	if err := config.CheckRootSlash(root); err != nil {
		return err
	}
	if err := keypath.Check(strings.TrimSuffix(root[1:], "/")); err != nil {
		return fmt.Errorf("%q: %w", root, err)
	}
	return nil
}

// New connects to ZooKeeper and waits for a session (or for ctx to end).
func New(ctx context.Context, opts Options) (*Coordinator, error) {
	if len(opts.Servers) == 0 {
		return nil, errors.New("zookeeper coordinator: options: no servers")
	}
	for _, s := range opts.Servers {
		if strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("zookeeper coordinator: options: empty server address in %q", config.Redact(strings.Join(opts.Servers, ",")))
		}
	}
	root := opts.Root
	if root == "" {
		root = DefaultRoot
	}
	if err := CheckRoot(root); err != nil {
		return nil, fmt.Errorf("zookeeper coordinator: options: root %w", err)
	}
	root = strings.TrimSuffix(root, "/")
	timeout := opts.SessionTimeout
	if timeout == 0 {
		timeout = DefaultSessionTimeout
	}
	if timeout < 0 {
		return nil, fmt.Errorf("zookeeper coordinator: options: negative session timeout %v", timeout)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "coord/zk")
	acl := gozk.WorldACL(gozk.PermAll)
	if a := opts.Auth; a != nil {
		if a.Username == "" || strings.Contains(a.Username, ":") {
			return nil, fmt.Errorf("zookeeper coordinator: options: auth: username %q: want a non-empty name without ':'", a.Username)
		}
		if a.Password == "" {
			return nil, errors.New("zookeeper coordinator: options: auth: empty password")
		}
		acl = gozk.DigestACL(gozk.PermAll, a.Username, a.Password.Reveal())
	}

	c := &Coordinator{
		root:     root,
		log:      log,
		acl:      acl,
		timeout:  timeout,
		done:     make(chan struct{}),
		sessions: make(chan struct{}, 1),
		held:     map[*leadership]struct{}{},
		regs:     map[string]*registration{},
	}
	conn, _, err := gozk.Connect(opts.Servers, timeout,
		gozk.WithLogger(newZKLogger(log)),
		gozk.WithLogInfo(false),
		gozk.WithEventCallback(c.onEvent))
	if err != nil {
		return nil, fmt.Errorf("zookeeper coordinator: connect to %v: %w", opts.Servers, err)
	}
	c.conn = conn

	for conn.State() != gozk.StateHasSession {
		select {
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("zookeeper coordinator: no session with %v: %w", opts.Servers, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if a := opts.Auth; a != nil {
		// The client re-sends the credentials after every reconnection, before any
		// queued request.
		if _, err := call(ctx, func() (struct{}, error) {
			return struct{}{}, conn.AddAuth("digest", []byte(a.Username+":"+a.Password.Reveal()))
		}); err != nil {
			conn.Close()
			// The client's error names neither the user nor the password.
			return nil, fmt.Errorf("zookeeper coordinator: add digest auth of user %q: %w", a.Username, err)
		}
		c.checkRootACL(a.Username)
	}
	c.wg.Add(1)
	go c.reconcile()
	return c, nil
}

// checkRootACL warns when the root znode exists with an ACL that does not restrict it to
// user: it predates the auth configuration, and so do perhaps nodes below it, which keep
// their ACL (the coordinator never changes an existing node's ACL).
func (c *Coordinator) checkRootACL(user string) {
	if c.root == "" {
		return
	}
	acl, _, err := c.conn.GetACL(c.root)
	switch {
	case errors.Is(err, gozk.ErrNoNode):
		return
	case err != nil:
		c.log.Warn("read the root znode's ACL", "root", c.root, "err", c.mapErr(err))
		return
	}
	for _, a := range acl {
		if a.Scheme != "digest" || !strings.HasPrefix(a.ID, user+":") {
			c.log.Warn("the root znode is not restricted to the coordinator's digest user: it was created without "+
				"coordinator.auth, and so perhaps were nodes below it, which keep their ACL; set the ACL with zkCli's setAcl -R or recreate the tree",
				"root", c.root, "acl_scheme", a.Scheme, "acl_id", redactDigest(a))
			return
		}
	}
}

// redactDigest shows an ACL's id without a digest's hash.
func redactDigest(a gozk.ACL) string {
	if a.Scheme == "digest" {
		if user, _, ok := strings.Cut(a.ID, ":"); ok {
			return user + ":" + config.Redacted
		}
	}
	return a.ID
}

// zkLogger bridges the client's Printf logging to slog. The client logs its routine
// connection chatter and its failures through the same call; only failures are warnings.
// The client retries the servers it cannot reach every second and says so each time: a
// failure that repeats is logged once, then once every repeatEvery with how many times
// it came since (a wave whose ensemble was down wrote the same line every second).
type zkLogger struct {
	log *slog.Logger

	mu   sync.Mutex
	said map[string]*repeats // failure → when last logged, how often since
}

type repeats struct {
	at    time.Time
	since int
}

// repeatEvery is how often a failure the client repeats is logged again.
const repeatEvery = 30 * time.Second

func newZKLogger(log *slog.Logger) *zkLogger { return &zkLogger{log: log, said: map[string]*repeats{}} }

func (l *zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.Contains(msg, "fail") && !strings.Contains(msg, "error") {
		l.log.Debug("zookeeper client", "detail", msg)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	r := l.said[msg]
	switch {
	case r == nil:
		if len(l.said) >= 64 { // the messages differ more than a few servers' would
			clear(l.said)
		}
		l.said[msg] = &repeats{at: now}
		l.log.Warn("zookeeper client", "detail", msg)
	case now.Sub(r.at) < repeatEvery:
		r.since++
	default:
		l.log.Warn("zookeeper client", "detail", msg, "times_since_last_said", r.since, "over", now.Sub(r.at).Round(time.Second).String())
		r.at, r.since = now, 0
	}
}

// onEvent is the client's event callback, called synchronously from its connection loop
// before the client goes on (to reconnect, for example). It must not block or call the client.
//
// Leadership is lost on Disconnected, at once. A disconnected client cannot know whether the
// server still holds its session: the server expires it SessionTimeout after it last heard
// from the client, and the client only notices silence after 2/3 of that (the client's
// read timeout), so the session may expire, and a successor win, before we reconnect. The
// alternative rule (stay leader while disconnected for less than 2/3 of the timeout, counted
// from the last message received) saves a leadership on short blips but leans on clock
// and scheduling assumptions; a wave that loses leadership simply campaigns again, so we
// take the rule that is safe without them. Expired is handled the same way.
func (c *Coordinator) onEvent(ev gozk.Event) {
	if ev.Type != gozk.EventSession {
		return
	}
	switch ev.State {
	case gozk.StateDisconnected, gozk.StateExpired:
		c.mu.Lock()
		c.connected = false
		c.epoch++
		lost := c.held
		c.held = map[*leadership]struct{}{}
		for l := range lost {
			// Their znodes may outlive this connection (the session may survive): the
			// reconciler deletes them once connected, so the key does not stay blocked.
			c.cleanups = append(c.cleanups, l.cleanup())
		}
		c.mu.Unlock()
		for l := range lost {
			l.lose()
		}
		if len(lost) > 0 {
			c.log.Warn("leadership lost with the zookeeper connection", "state", ev.State.String(), "leaderships", len(lost))
		}
	case gozk.StateHasSession:
		c.mu.Lock()
		c.connected = true
		c.mu.Unlock()
		c.kick()
	}
}

// kick asks the reconciler to run.
func (c *Coordinator) kick() {
	select {
	case c.sessions <- struct{}{}:
	default:
	}
}

// reconcile runs after every (re)connection: on a new session (the old one expired) it
// re-creates the registrations whose ctx lives, and it deletes the znodes of leaderships
// lost while disconnected. Work that fails on a flaky connection is retried.
//
// go-zookeeper's Conn opens a new session by itself after an expiry (it reconnects with
// session id 0), so the coordinator keeps its one Conn and only redoes what the old
// session's end undid.
func (c *Coordinator) reconcile() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case <-c.sessions:
		}
		sid := c.conn.SessionID()
		if sid == 0 || c.conn.State() != gozk.StateHasSession {
			continue // the next StateHasSession kicks again
		}
		c.mu.Lock()
		if sid != c.session {
			if c.session != 0 {
				c.log.Warn("zookeeper session replaced; re-registering members", "old_session", fmt.Sprintf("%#x", c.session), "session", fmt.Sprintf("%#x", sid), "members", len(c.regs))
				c.recreate = true
			}
			c.session = sid
		}
		recreate := c.recreate
		regs := make([]*registration, 0, len(c.regs))
		for _, r := range c.regs {
			regs = append(regs, r)
		}
		cleanups := c.cleanups
		c.cleanups = nil
		c.mu.Unlock()

		again := false
		if recreate {
			for _, r := range regs {
				err := r.create()
				if err != nil && transient(err) {
					again = true
				}
				if err != nil {
					c.log.Error("re-register member", "path", r.path, "err", err)
				}
			}
			if !again {
				c.mu.Lock()
				if c.session == sid {
					c.recreate = false
				}
				c.mu.Unlock()
			}
		}
		var retry []*cleanup
		for _, cl := range cleanups {
			if err := cl.run(c); err != nil {
				c.log.Debug("clean up a lost leadership", "dir", cl.dir, "err", err)
				retry = append(retry, cl)
			}
		}
		if len(retry) > 0 {
			c.mu.Lock()
			c.cleanups = append(c.cleanups, retry...)
			c.mu.Unlock()
			again = true
		}
		if again {
			c.wg.Go(func() {
				select {
				case <-time.After(time.Second):
					c.kick()
				case <-c.done:
				}
			})
		}
	}
}

// Close ends the session: memberships end and leaderships are lost (Lost closes before the
// session's znodes go, so no successor overlaps). Idempotent; waits for the goroutines.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	close(c.done)
	lost := c.held
	c.held = map[*leadership]struct{}{}
	c.mu.Unlock()
	for l := range lost {
		l.lose()
	}
	c.conn.Close()
	c.wg.Wait()
	return nil
}

func (c *Coordinator) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// zpath is the znode path of key.
func (c *Coordinator) zpath(key string) string { return c.root + "/" + key }

// begin validates key and checks that the coordinator is open and ctx live.
func (c *Coordinator) begin(ctx context.Context, key string) error {
	if err := keypath.Check(key); err != nil {
		return err
	}
	if c.isClosed() {
		return coord.ErrClosed
	}
	return ctx.Err()
}

// mapErr wraps a client error with the matching coord sentinel, keeping the original.
func (c *Coordinator) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gozk.ErrNoNode):
		return fmt.Errorf("%w: %w", coord.ErrNotFound, err)
	case errors.Is(err, gozk.ErrBadVersion):
		return fmt.Errorf("%w: %w", coord.ErrVersionConflict, err)
	case errors.Is(err, gozk.ErrNodeExists):
		return fmt.Errorf("%w: %w", coord.ErrExists, err)
	case errors.Is(err, gozk.ErrClosing) || (c.isClosed() && errors.Is(err, gozk.ErrConnectionClosed)):
		return fmt.Errorf("%w: %w", coord.ErrClosed, err)
	case errors.Is(err, gozk.ErrSessionExpired):
		return fmt.Errorf("%w: %w", coord.ErrSessionLost, err)
	case errors.Is(err, gozk.ErrNoAuth):
		return fmt.Errorf("zookeeper: the znode's ACL does not admit this client (coordinator.auth: wrong or missing "+
			"username or password, or the node was created with other credentials): %w", err)
	}
	return err
}

// call runs a ZooKeeper operation, returning early when ctx ends. The client's calls take
// no ctx; an abandoned one finishes in the background when the client answers or fails it
// (Close fails every pending request).
func call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// read runs an idempotent read through call, again while its error is transient: the
// client fails every pending request with ErrConnectionClosed when a connection drops and
// then reconnects by itself, and a reader (a CLI command, a status page) should not fail on
// a stall the session survives. It gives up after the session timeout, when a session
// that has not come back is gone anyway.
func read[T any](ctx context.Context, c *Coordinator, fn func() (T, error)) (T, error) {
	deadline := time.Now().Add(c.timeout)
	pause := 50 * time.Millisecond
	for {
		v, err := call(ctx, fn)
		if err == nil || !transient(err) || c.isClosed() || time.Now().After(deadline) {
			return v, err
		}
		if serr := c.sleep(ctx, pause); serr != nil {
			return v, err
		}
		pause = min(2*pause, time.Second)
	}
}

// transient reports errors worth retrying after a pause: the connection is down or
// being re-established, and the operation may succeed on the next one.
func transient(err error) bool {
	return errors.Is(err, gozk.ErrConnectionClosed) || errors.Is(err, gozk.ErrNoServer) ||
		errors.Is(err, gozk.ErrSessionExpired) || errors.Is(err, gozk.ErrSessionMoved)
}

// sleep pauses for d unless ctx ends or the coordinator closes.
func (c *Coordinator) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return coord.ErrClosed
	}
}

// ensure creates the persistent znode p and its missing parents (empty data).
func (c *Coordinator) ensure(p string) error {
	if p == "" || p == "/" {
		return nil
	}
	ok, _, err := c.conn.Exists(p)
	if err != nil || ok {
		return err
	}
	if err := c.ensure(path.Dir(p)); err != nil {
		return err
	}
	_, err = c.conn.Create(p, nil, 0, c.acl)
	if errors.Is(err, gozk.ErrNodeExists) {
		return nil
	}
	return err
}

// create creates p with data and flags, creating missing parents first.
func (c *Coordinator) create(p string, data []byte, flags int32) (string, error) {
	got, err := c.conn.Create(p, data, flags, c.acl)
	if errors.Is(err, gozk.ErrNoNode) {
		if err := c.ensure(path.Dir(p)); err != nil {
			return "", err
		}
		got, err = c.conn.Create(p, data, flags, c.acl)
	}
	return got, err
}
