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
package zk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

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
}

// Coordinator is a coord.Coordinator on ZooKeeper. Its methods are safe for concurrent use.
type Coordinator struct {
	conn *gozk.Conn
	root string
	log  *slog.Logger
	acl  []gozk.ACL

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

// New connects to ZooKeeper and waits for a session (or for ctx to end).
func New(ctx context.Context, opts Options) (*Coordinator, error) {
	if len(opts.Servers) == 0 {
		return nil, errors.New("zookeeper coordinator: options: no servers")
	}
	for _, s := range opts.Servers {
		if strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("zookeeper coordinator: options: empty server address in %q", opts.Servers)
		}
	}
	root := opts.Root
	if root == "" {
		root = DefaultRoot
	}
	if root != "/" {
		if !strings.HasPrefix(root, "/") {
			return nil, fmt.Errorf("zookeeper coordinator: options: root %q must start with a slash", root)
		}
		if err := keypath.Check(root[1:]); err != nil {
			return nil, fmt.Errorf("zookeeper coordinator: options: root: %w", err)
		}
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

	c := &Coordinator{
		root:     root,
		log:      log,
		acl:      gozk.WorldACL(gozk.PermAll),
		done:     make(chan struct{}),
		sessions: make(chan struct{}, 1),
		held:     map[*leadership]struct{}{},
		regs:     map[string]*registration{},
	}
	conn, _, err := gozk.Connect(opts.Servers, timeout,
		gozk.WithLogger(zkLogger{log}),
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
	c.wg.Add(1)
	go c.reconcile()
	return c, nil
}

// zkLogger bridges the client's Printf logging to slog. The client logs its routine
// connection chatter and its failures through the same call; only failures are warnings.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	level := slog.LevelDebug
	if strings.Contains(msg, "fail") || strings.Contains(msg, "error") {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "zookeeper client", "detail", msg)
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

// ---- values ----

// Get returns the value of key, or coord.ErrNotFound.
func (c *Coordinator) Get(ctx context.Context, key string) (coord.Value, error) {
	if err := c.begin(ctx, key); err != nil {
		return coord.Value{}, err
	}
	return call(ctx, func() (coord.Value, error) {
		data, stat, err := c.conn.Get(c.zpath(key))
		if err != nil {
			return coord.Value{}, fmt.Errorf("get %s: %w", key, c.mapErr(err))
		}
		if data == nil {
			data = []byte{}
		}
		return coord.Value{Data: data, Version: int64(stat.Version)}, nil
	})
}

// Put writes key if its znode version matches (NoVersion: create; AnyVersion: overwrite
// or create) and returns the new version.
func (c *Coordinator) Put(ctx context.Context, key string, data []byte, version int64) (int64, error) {
	if err := c.begin(ctx, key); err != nil {
		return 0, err
	}
	if version < coord.AnyVersion {
		return 0, fmt.Errorf("put %s: invalid version %d", key, version)
	}
	if data == nil {
		data = []byte{}
	}
	p := c.zpath(key)
	return call(ctx, func() (int64, error) {
		switch {
		case version == coord.NoVersion:
			_, err := c.create(p, data, 0)
			if errors.Is(err, gozk.ErrNodeExists) {
				return 0, fmt.Errorf("create %s: key exists: %w: %w", key, coord.ErrVersionConflict, err)
			}
			if err != nil {
				return 0, fmt.Errorf("create %s: %w", key, c.mapErr(err))
			}
			return 0, nil
		case version == coord.AnyVersion:
			for {
				stat, err := c.conn.Set(p, data, -1)
				if err == nil {
					return int64(stat.Version), nil
				}
				if !errors.Is(err, gozk.ErrNoNode) {
					return 0, fmt.Errorf("put %s: %w", key, c.mapErr(err))
				}
				_, err = c.create(p, data, 0)
				if err == nil {
					return 0, nil
				}
				if !errors.Is(err, gozk.ErrNodeExists) { // else: created meanwhile, overwrite it
					return 0, fmt.Errorf("put %s: %w", key, c.mapErr(err))
				}
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
			}
		default:
			if version > math.MaxInt32 { // znode versions are int32: this one cannot match
				return 0, fmt.Errorf("put %s at version %d: %w", key, version, coord.ErrVersionConflict)
			}
			stat, err := c.conn.Set(p, data, int32(version))
			if errors.Is(err, gozk.ErrNoNode) || errors.Is(err, gozk.ErrBadVersion) {
				return 0, fmt.Errorf("put %s at version %d: %w: %w", key, version, coord.ErrVersionConflict, err)
			}
			if err != nil {
				return 0, fmt.Errorf("put %s: %w", key, c.mapErr(err))
			}
			return int64(stat.Version), nil
		}
	})
}

// Delete removes key and everything under it if key's version matches.
func (c *Coordinator) Delete(ctx context.Context, key string, version int64) error {
	if err := c.begin(ctx, key); err != nil {
		return err
	}
	if version < coord.AnyVersion || version > math.MaxInt32 {
		return fmt.Errorf("delete %s: invalid version %d", key, version)
	}
	p := c.zpath(key)
	_, err := call(ctx, func() (struct{}, error) {
		want := int32(-1)
		if version != coord.AnyVersion {
			want = int32(version)
		}
		for attempt := 0; ; attempt++ {
			ok, stat, err := c.conn.Exists(p)
			if err != nil {
				return struct{}{}, fmt.Errorf("delete %s: %w", key, c.mapErr(err))
			}
			if !ok {
				return struct{}{}, fmt.Errorf("delete %s: %w", key, coord.ErrNotFound)
			}
			if want >= 0 && stat.Version != want {
				return struct{}{}, fmt.Errorf("delete %s at version %d: current version is %d: %w", key, version, stat.Version, coord.ErrVersionConflict)
			}
			if stat.NumChildren > 0 {
				if err := c.deleteChildren(p); err != nil {
					return struct{}{}, fmt.Errorf("delete under %s: %w", key, c.mapErr(err))
				}
			}
			err = c.conn.Delete(p, want)
			switch {
			case err == nil:
				return struct{}{}, nil
			case errors.Is(err, gozk.ErrNotEmpty) && attempt < 10:
				continue // a child appeared meanwhile
			case errors.Is(err, gozk.ErrNoNode):
				return struct{}{}, fmt.Errorf("delete %s: %w: %w", key, coord.ErrNotFound, err)
			case errors.Is(err, gozk.ErrBadVersion):
				return struct{}{}, fmt.Errorf("delete %s at version %d: %w: %w", key, version, coord.ErrVersionConflict, err)
			default:
				return struct{}{}, fmt.Errorf("delete %s: %w", key, c.mapErr(err))
			}
		}
	})
	return err
}

func (c *Coordinator) deleteChildren(p string) error {
	children, _, err := c.conn.Children(p)
	if errors.Is(err, gozk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		cp := p + "/" + ch
		if err := c.deleteChildren(cp); err != nil {
			return err
		}
		if err := c.conn.Delete(cp, -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// List returns the sorted names of key's children (none when key is absent).
func (c *Coordinator) List(ctx context.Context, key string) ([]string, error) {
	if err := c.begin(ctx, key); err != nil {
		return nil, err
	}
	return call(ctx, func() ([]string, error) {
		children, _, err := c.conn.Children(c.zpath(key))
		if errors.Is(err, gozk.ErrNoNode) {
			return []string{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", key, c.mapErr(err))
		}
		slices.Sort(children)
		return children, nil
	})
}

// ---- members ----

// registration is one live Register: its ephemeral znode is re-created on a new session
// while ctx lives.
type registration struct {
	c    *Coordinator
	path string
	data []byte

	mu    sync.Mutex // serializes create and the final delete
	ended bool
}

// create makes the member znode in the current session; a znode already owned by this
// session (an earlier attempt whose answer was lost) counts as created.
func (r *registration) create() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil
	}
	_, err := r.c.create(r.path, r.data, gozk.FlagEphemeral)
	if errors.Is(err, gozk.ErrNodeExists) {
		ok, stat, serr := r.c.conn.Exists(r.path)
		if serr != nil {
			return serr
		}
		if ok && stat.EphemeralOwner == r.c.conn.SessionID() {
			_, err := r.c.conn.Set(r.path, r.data, -1) // ours: an earlier try, or a registration that just ended
			return err
		}
		return fmt.Errorf("%w: %s is held by another session", coord.ErrExists, r.path)
	}
	return err
}

// end deletes the member znode if this session owns it, retrying through disconnections.
func (r *registration) end() {
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
	c := r.c
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		c.mu.Lock()
		other := c.regs[r.path]
		c.mu.Unlock()
		if other != nil && other != r {
			return // registered again meanwhile: the znode is the new registration's
		}
		ok, stat, err := c.conn.Exists(r.path)
		if err == nil {
			if !ok || stat.EphemeralOwner != c.conn.SessionID() {
				return
			}
			err = c.conn.Delete(r.path, stat.Version)
			if err == nil || errors.Is(err, gozk.ErrNoNode) || errors.Is(err, gozk.ErrBadVersion) {
				return
			}
		}
		c.log.Debug("remove member znode", "path", r.path, "err", err)
		if c.sleep(context.Background(), delay) != nil {
			return // closed: the session's end removes it
		}
	}
}

// Register creates an ephemeral znode group/id holding m.Data, deleted when ctx ends,
// and re-created on a new session while ctx lives.
func (c *Coordinator) Register(ctx context.Context, group string, m coord.Member) error {
	if err := c.begin(ctx, group); err != nil {
		return err
	}
	if err := keypath.CheckName(m.ID); err != nil {
		return fmt.Errorf("register in %s: member id: %w", group, err)
	}
	r := &registration{c: c, path: c.zpath(group) + "/" + m.ID, data: slices.Clone(m.Data)}
	if r.data == nil {
		r.data = []byte{}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return coord.ErrClosed
	}
	if _, ok := c.regs[r.path]; ok {
		c.mu.Unlock()
		return fmt.Errorf("register %s in %s: %w", m.ID, group, coord.ErrExists)
	}
	c.regs[r.path] = r
	c.wg.Add(1)
	c.mu.Unlock()

	forget := func() {
		c.mu.Lock()
		if c.regs[r.path] == r {
			delete(c.regs, r.path)
		}
		c.mu.Unlock()
	}
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, r.create() })
	if err != nil {
		forget()
		c.wg.Done()
		if !errors.Is(err, coord.ErrExists) {
			go r.end() // ctx ended mid-create: the znode may exist
			err = c.mapErr(err)
		}
		return fmt.Errorf("register %s in %s: %w", m.ID, group, err)
	}
	go func() {
		defer c.wg.Done()
		select {
		case <-ctx.Done():
			forget()
			r.end()
		case <-c.done: // the session's end removes the znode
		}
	}()
	return nil
}

// Members lists the live members of group, sorted by ID.
func (c *Coordinator) Members(ctx context.Context, group string) ([]coord.Member, error) {
	if err := c.begin(ctx, group); err != nil {
		return nil, err
	}
	return call(ctx, func() ([]coord.Member, error) {
		children, _, err := c.conn.Children(c.zpath(group))
		if errors.Is(err, gozk.ErrNoNode) {
			return []coord.Member{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("members of %s: %w", group, c.mapErr(err))
		}
		ms, err := c.memberData(group, children)
		if err != nil {
			return nil, fmt.Errorf("members of %s: %w", group, c.mapErr(err))
		}
		return ms, nil
	})
}

// memberData reads the members' data; a member that left meanwhile is skipped.
func (c *Coordinator) memberData(group string, ids []string) ([]coord.Member, error) {
	slices.Sort(ids)
	out := make([]coord.Member, 0, len(ids))
	for _, id := range ids {
		data, _, err := c.conn.Get(c.zpath(group) + "/" + id)
		if errors.Is(err, gozk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if data == nil {
			data = []byte{}
		}
		out = append(out, coord.Member{ID: id, Data: data})
	}
	return out, nil
}

// WatchMembers sends the members of group and then the list after each change, until
// ctx ends or the coordinator closes. Changes while the receiver is busy may be coalesced.
func (c *Coordinator) WatchMembers(ctx context.Context, group string) (<-chan []coord.Member, error) {
	if err := c.begin(ctx, group); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, coord.ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()
	out := make(chan []coord.Member)
	go func() {
		defer c.wg.Done()
		defer close(out)
		p := c.zpath(group)
		var last []coord.Member
		sent := false
		delay := 100 * time.Millisecond
		for {
			ms, ev, err := c.watchOnce(group, p)
			if err != nil {
				if c.isClosed() || ctx.Err() != nil {
					return
				}
				c.log.Debug("watch members", "group", group, "err", err)
				if c.sleep(ctx, delay) != nil {
					return
				}
				delay = min(2*delay, 2*time.Second)
				continue
			}
			delay = 100 * time.Millisecond
			if !sent || !sameMembers(ms, last) {
				select {
				case out <- ms:
					last, sent = ms, true
				case <-ctx.Done():
					return
				case <-c.done:
					return
				}
			}
			select {
			case <-ev: // a change, or the watch ended with the session: look again
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
		}
	}()
	return out, nil
}

// watchOnce reads group's members and sets a watch that fires on the next change
// (on the group's creation when it does not exist yet).
func (c *Coordinator) watchOnce(group, p string) ([]coord.Member, <-chan gozk.Event, error) {
	children, _, ev, err := c.conn.ChildrenW(p)
	if errors.Is(err, gozk.ErrNoNode) {
		ok, _, eev, err := c.conn.ExistsW(p)
		if err != nil {
			return nil, nil, err
		}
		if ok { // created meanwhile
			return c.watchOnce(group, p)
		}
		return []coord.Member{}, eev, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ms, err := c.memberData(group, children)
	return ms, ev, err
}

func sameMembers(a, b []coord.Member) bool {
	return slices.EqualFunc(a, b, func(x, y coord.Member) bool {
		return x.ID == y.ID && string(x.Data) == string(y.Data)
	})
}

// ---- leadership ----

// leadership is held leadership of one key.
type leadership struct {
	c          *Coordinator
	key        string
	candidate  string // full path of our candidate znode
	leaderPath string
	token      int64 // czxid of our leader znode
	lost       chan struct{}
	once       sync.Once

	resignMu sync.Mutex
	resigned bool
}

func (l *leadership) Lost() <-chan struct{} { return l.lost }
func (l *leadership) Token() int64          { return l.token }
func (l *leadership) lose()                 { l.once.Do(func() { close(l.lost) }) }

func (l *leadership) cleanup() *cleanup {
	return &cleanup{dir: path.Dir(l.candidate), name: path.Base(l.candidate), leaderPath: l.leaderPath, token: l.token}
}

// cleanup removes what a lost or abandoned candidate left: the candidate znode (by exact
// name, or by guid when the create's answer was lost) and the leader znode if it is ours.
type cleanup struct {
	dir        string // candidates directory; "" when there is no candidate to remove
	name       string // exact candidate name, or "" to search dir by guid
	guid       string
	leaderPath string
	token      int64 // czxid of our leader znode; 0 when there is none to remove
}

func (cl *cleanup) run(c *Coordinator) error {
	if cl.token != 0 {
		ok, stat, err := c.conn.Exists(cl.leaderPath)
		if err != nil {
			return err
		}
		if ok && stat.Czxid == cl.token {
			if err := c.conn.Delete(cl.leaderPath, -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
				return err
			}
		}
	}
	if cl.dir == "" {
		return nil
	}
	var names []string
	if cl.name != "" {
		names = []string{cl.name}
	} else {
		children, _, err := c.conn.Children(cl.dir)
		if errors.Is(err, gozk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, ch := range children {
			if strings.Contains(ch, cl.guid) {
				names = append(names, ch)
			}
		}
	}
	for _, n := range names {
		if err := c.conn.Delete(cl.dir+"/"+n, -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// Resign closes Lost, then deletes the leader and candidate znodes so the next candidate
// may win. Idempotent. When ZooKeeper is unreachable the znodes are deleted on reconnection
// (or vanish with the session), and Resign still succeeds: leadership is given up either way.
func (l *leadership) Resign(ctx context.Context) error {
	l.resignMu.Lock()
	defer l.resignMu.Unlock()
	if l.resigned {
		return nil
	}
	l.resigned = true
	c := l.c
	c.mu.Lock()
	_, held := c.held[l]
	delete(c.held, l)
	c.mu.Unlock()
	l.lose() // before the znodes go: the holder stops before a successor can start
	if !held {
		return nil // lost already; the disconnection handler queued the cleanup
	}
	cl := l.cleanup()
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, cl.run(c) })
	if err != nil {
		if c.isClosed() {
			return nil // the session's end removes the znodes
		}
		c.log.Debug("resign: znodes will be removed on reconnection", "key", l.key, "err", err)
		c.mu.Lock()
		c.cleanups = append(c.cleanups, cl)
		c.mu.Unlock()
	}
	return nil
}

// watch closes Lost if our leader znode disappears or is replaced while we hold it (a
// Delete of the key, an operator's hand); the session's loss is handled by onEvent.
func (l *leadership) watch() {
	c := l.c
	defer c.wg.Done()
	for {
		ok, stat, ev, err := c.conn.ExistsW(l.leaderPath)
		if err != nil {
			// Disconnected or closing: onEvent and Close take care of Lost; look again later.
			select {
			case <-l.lost:
				return
			case <-c.done:
				return
			case <-time.After(200 * time.Millisecond):
				continue
			}
		}
		if !ok || stat.Czxid != l.token {
			c.mu.Lock()
			_, held := c.held[l]
			delete(c.held, l)
			if held {
				c.cleanups = append(c.cleanups, l.cleanup())
			}
			c.mu.Unlock()
			l.lose()
			if held {
				c.log.Warn("leader znode removed by someone else; leadership lost", "key", l.key)
				c.kick() // have the reconciler drop our candidate znode
			}
			return
		}
		select {
		case <-ev:
		case <-l.lost:
			return
		case <-c.done:
			return
		}
	}
}

// lookAgain is a closed channel: a campaign round returns it to be run again at once.
var lookAgain = func() <-chan gozk.Event {
	ch := make(chan gozk.Event)
	close(ch)
	return ch
}()

// seq is the sequence number ZooKeeper appended to a candidate name.
func seq(name string) (int64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	return n, err == nil
}

func newGUID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Campaign queues a candidate for key and blocks until it is the lowest, then publishes
// data in the leader znode. On ctx end it withdraws the candidate.
func (c *Coordinator) Campaign(ctx context.Context, key string, data []byte) (coord.Leadership, error) {
	if err := c.begin(ctx, key); err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	base := c.zpath(key)
	cands := base + "/candidates"
	guid := newGUID()
	name := ""      // our candidate's name once known
	unsure := false // a create may have succeeded without us hearing so
	abandon := func() {
		if name == "" && !unsure {
			return // nothing was created
		}
		cl := &cleanup{dir: cands, name: name, guid: guid}
		go func() {
			if err := cl.run(c); err != nil && !c.isClosed() {
				c.mu.Lock()
				c.cleanups = append(c.cleanups, cl)
				c.mu.Unlock()
			}
		}()
	}
	delay := 100 * time.Millisecond
	backoff := func(err error) error {
		if c.isClosed() {
			return fmt.Errorf("campaign %s: %w", key, coord.ErrClosed)
		}
		if !transient(err) {
			return fmt.Errorf("campaign %s: %w", key, c.mapErr(err))
		}
		c.log.Debug("campaign: retrying", "key", key, "err", err)
		if err := c.sleep(ctx, delay); err != nil {
			return fmt.Errorf("campaign %s: %w", key, err)
		}
		delay = min(2*delay, 2*time.Second)
		return nil
	}

	for {
		if err := ctx.Err(); err != nil {
			abandon()
			return nil, fmt.Errorf("campaign %s: %w", key, err)
		}
		if c.isClosed() {
			return nil, fmt.Errorf("campaign %s: %w", key, coord.ErrClosed)
		}
		c.mu.Lock()
		epoch, connected := c.epoch, c.connected
		c.mu.Unlock()
		if !connected {
			if err := backoff(gozk.ErrConnectionClosed); err != nil {
				abandon()
				return nil, err
			}
			continue
		}

		// One round: find (or make) our candidate, then lead or wait for the predecessor.
		l, wait, err := c.campaignRound(key, cands, base, guid, &name, &unsure, data, epoch)
		if err != nil {
			if berr := backoff(err); berr != nil {
				abandon()
				return nil, berr
			}
			continue
		}
		delay = 100 * time.Millisecond
		if l != nil {
			return l, nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
		case <-c.done:
		}
	}
}

// campaignRound does one step of Campaign. It returns the leadership when won, or a channel
// that fires when it is worth looking again.
func (c *Coordinator) campaignRound(key, cands, base, guid string, name *string, unsure *bool, data []byte, epoch uint64) (*leadership, <-chan gozk.Event, error) {
	children, _, err := c.conn.Children(cands)
	if err != nil && !errors.Is(err, gozk.ErrNoNode) {
		return nil, nil, err
	}
	// Find our candidate: by name, or by guid after a create whose answer was lost.
	found := false
	for _, ch := range children {
		if (*name != "" && ch == *name) || (*name == "" && strings.Contains(ch, guid)) {
			*name, found = ch, true
			break
		}
	}
	if !found {
		// Never created, or gone with an expired session: create it (again).
		*name = ""
		*unsure = true
		created, err := c.create(cands+"/c-"+guid+"-", data, gozk.FlagEphemeral|gozk.FlagSequence)
		if err != nil {
			return nil, nil, err // the create may have happened anyway: the next round looks by guid
		}
		*name, *unsure = path.Base(created), false
		return nil, lookAgain, nil // look again right away, with the new node among the children
	}

	mine, _ := seq(*name)
	var pred string
	var predSeq int64 = -1
	for _, ch := range children {
		s, ok := seq(ch)
		if !ok || ch == *name {
			continue
		}
		if s < mine && s > predSeq {
			pred, predSeq = ch, s
		}
	}
	if pred != "" {
		ok, _, ev, err := c.conn.ExistsW(cands + "/" + pred)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, lookAgain, nil
		}
		return nil, ev, nil
	}

	// We are the lowest candidate: publish the leader znode.
	leaderPath := base + "/leader"
	_, err = c.conn.Create(leaderPath, data, gozk.FlagEphemeral, c.acl)
	if errors.Is(err, gozk.ErrNodeExists) {
		ok, stat, ev, err := c.conn.ExistsW(leaderPath)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, lookAgain, nil
		}
		if stat.EphemeralOwner == c.conn.SessionID() {
			// Left by a leadership of ours that was lost and not yet cleaned up (no candidate
			// of ours precedes this one, so it is not a live one): remove it.
			if err := c.conn.Delete(leaderPath, stat.Version); err != nil && !errors.Is(err, gozk.ErrNoNode) && !errors.Is(err, gozk.ErrBadVersion) {
				return nil, nil, err
			}
			return nil, lookAgain, nil
		}
		// Another session's leader znode outlives its candidate for a moment (it deletes
		// leader then candidate, or its session is ending): wait for it to go.
		return nil, ev, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ok, stat, err := c.conn.Exists(leaderPath)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, lookAgain, nil
	}
	l := &leadership{
		c: c, key: key, candidate: cands + "/" + *name, leaderPath: leaderPath,
		token: stat.Czxid, lost: make(chan struct{}),
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, gozk.ErrClosing
	}
	if c.epoch != epoch || !c.connected {
		// The connection dropped since this round began: what we created may belong to a
		// session that is gone or going. Start over; the cleanup removes our leader znode.
		c.cleanups = append(c.cleanups, &cleanup{leaderPath: leaderPath, token: stat.Czxid})
		c.mu.Unlock()
		return nil, nil, gozk.ErrConnectionClosed
	}
	c.held[l] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	go l.watch()
	return l, nil, nil
}

// Leader returns the data of key's leader znode, or coord.ErrNotFound.
func (c *Coordinator) Leader(ctx context.Context, key string) ([]byte, error) {
	if err := c.begin(ctx, key); err != nil {
		return nil, err
	}
	return call(ctx, func() ([]byte, error) {
		data, _, err := c.conn.Get(c.zpath(key) + "/leader")
		if err != nil {
			return nil, fmt.Errorf("leader of %s: %w", key, c.mapErr(err))
		}
		if data == nil {
			data = []byte{}
		}
		return data, nil
	})
}
