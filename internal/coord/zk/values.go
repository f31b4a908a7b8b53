package zk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	gozk "github.com/go-zookeeper/zk"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/internal/keypath"
)

// Get returns the value of key, or coord.ErrNotFound.
func (c *Coordinator) Get(ctx context.Context, key string) (coord.Value, error) {
	if err := c.begin(ctx, key); err != nil {
		return coord.Value{}, err
	}
	return read(ctx, c, func() (coord.Value, error) {
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
	if err := keypath.CheckData(data); err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
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
					if errors.Is(err, gozk.ErrNotEmpty) && attempt < deleteAttempts {
						continue // a grandchild appeared meanwhile: list again
					}
					return struct{}{}, fmt.Errorf("delete under %s: %w", key, c.mapErr(err))
				}
			}
			err = c.conn.Delete(p, want)
			switch {
			case err == nil:
				return struct{}{}, nil
			case errors.Is(err, gozk.ErrNotEmpty) && attempt < deleteAttempts:
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

// deleteAttempts bounds how often Delete lists a subtree again because a node was created
// in it while it was being deleted (ErrNotEmpty).
const deleteAttempts = 10

// testHookDeleted, when set (by tests), is called after each node deleteChildren deleted.
var testHookDeleted func(p string)

// deleteChildren deletes everything under p, deepest first. Another client may create a
// node in the subtree meanwhile (a wave campaigning for an instance being removed creates
// its candidate and, with it, the candidates' parent again): a node that is no longer
// empty when its turn comes has its children listed and deleted again, a bounded number
// of times, before ErrNotEmpty is returned.
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
		for attempt := 0; ; attempt++ {
			if err := c.deleteChildren(cp); err != nil {
				return err
			}
			err := c.conn.Delete(cp, -1)
			if err == nil && testHookDeleted != nil {
				testHookDeleted(cp)
			}
			if err == nil || errors.Is(err, gozk.ErrNoNode) {
				break
			}
			if !errors.Is(err, gozk.ErrNotEmpty) || attempt >= deleteAttempts {
				return err
			}
		}
	}
	return nil
}

// List returns the sorted names of key's children (none when key is absent).
func (c *Coordinator) List(ctx context.Context, key string) ([]string, error) {
	if err := c.begin(ctx, key); err != nil {
		return nil, err
	}
	return read(ctx, c, func() ([]string, error) {
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

// WatchValue signals at once, then on each change of key's znode (ZooKeeper's exists
// watch fires on its creation, deletion and writes), and again whenever the watch had to
// be set anew (after an error or a session's end: a change may have gone unseen), until
// ctx ends or the coordinator closes; then it closes the channel.
func (c *Coordinator) WatchValue(ctx context.Context, key string) (<-chan struct{}, error) {
	if err := c.startWatch(ctx, key); err != nil {
		return nil, err
	}
	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default: // one is pending: the receiver reads the latest value anyway
		}
	}
	go func() {
		defer c.wg.Done()
		defer close(out)
		p := c.zpath(key)
		c.watchLoop(ctx, "watch value "+key, func() (<-chan gozk.Event, error) {
			_, _, ev, err := c.conn.ExistsW(p)
			return ev, err
		}, func() bool { signal(); return true })
	}()
	return out, nil
}
