package zk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/internal/keypath"
)

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
	if err := keypath.CheckData(data); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", key, err)
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
	return read(ctx, c, func() ([]byte, error) {
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
