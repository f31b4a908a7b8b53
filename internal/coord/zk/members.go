package zk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/internal/keypath"
)

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
	if err := keypath.CheckData(m.Data); err != nil {
		return fmt.Errorf("register %s in %s: %w", m.ID, group, err)
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
	return read(ctx, c, func() ([]coord.Member, error) {
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
	if err := c.startWatch(ctx, group); err != nil {
		return nil, err
	}
	out := make(chan []coord.Member)
	go func() {
		defer c.wg.Done()
		defer close(out)
		p := c.zpath(group)
		var ms, last []coord.Member
		sent := false
		c.watchLoop(ctx, "watch members "+group, func() (ev <-chan gozk.Event, err error) {
			ms, ev, err = c.watchOnce(group, p)
			return ev, err
		}, func() bool {
			if sent && sameMembers(ms, last) {
				return true
			}
			select {
			case out <- ms:
				last, sent = ms, true
				return true
			case <-ctx.Done():
			case <-c.done:
			}
			return false
		})
	}()
	return out, nil
}

// startWatch checks key and counts the watch's goroutine in, unless the coordinator is
// closed.
func (c *Coordinator) startWatch(ctx context.Context, key string) error {
	if err := c.begin(ctx, key); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return coord.ErrClosed
	}
	c.wg.Add(1)
	return nil
}

// watchLoop sets a watch with arm, calls got, and waits for the watch to fire (a change,
// or the session's end) to set it again, until ctx ends, the coordinator closes or got
// returns false. A watch that cannot be set is tried again with back-off.
func (c *Coordinator) watchLoop(ctx context.Context, what string, arm func() (<-chan gozk.Event, error), got func() bool) {
	delay := 100 * time.Millisecond
	for {
		ev, err := arm()
		if err != nil {
			if c.isClosed() || ctx.Err() != nil {
				return
			}
			c.log.Debug(what, "err", err)
			if c.sleep(ctx, delay) != nil {
				return
			}
			delay = min(2*delay, 2*time.Second)
			continue
		}
		delay = 100 * time.Millisecond
		if !got() {
			return
		}
		select {
		case <-ev:
		case <-ctx.Done():
			return
		case <-c.done:
			return
		}
	}
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
