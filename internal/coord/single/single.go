// Package single is the coordinator of the embedded shape: one process that is its own
// cluster. It always leads (a key's first candidate wins at once; a second candidate in the
// same process waits for the first to resign), keeps members in memory, and persists values
// with their versions in one JSON file, written atomically and locked against a second
// process.
package single

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/internal/keypath"
	"github.com/binlake/binlake/internal/durable"
	"github.com/binlake/binlake/internal/flock"
)

var _ coord.Coordinator = (*Coordinator)(nil)

// Options configures a single-process coordinator.
type Options struct {
	// Path is the JSON file holding the values, for example "var/binlake/coord.json".
	// It is created with its directory when missing. A sibling Path+".lock" is held with
	// flock while the coordinator is open, so a second process fails to open the same file.
	Path string
	// SyncDir fsyncs a directory, which makes the file's replacement by a rename (and the
	// directories created for it) durable; nil uses durable.SyncDir. Tests record the calls.
	SyncDir func(dir string) error
}

// fileFormat is the version of the file layout, checked when loading.
const fileFormat = 1

// state is the file's content.
type state struct {
	Format int `json:"format"`
	// Token is the last fencing token handed out. It is persisted so that tokens keep
	// growing across restarts: a leader of the previous run never out-ranks this one.
	Token  int64            `json:"token"`
	Values map[string]entry `json:"values"`
}

type entry struct {
	Data    []byte `json:"data"`
	Version int64  `json:"version"`
}

// Coordinator is the single-process coordinator. Its methods are safe for concurrent use.
type Coordinator struct {
	path    string
	syncDir func(string) error
	lock    *os.File

	mu       sync.Mutex
	closed   bool
	done     chan struct{} // closed by Close
	st       state
	members  map[string]map[string]*registration // group → id
	watchers map[string]map[*watcher]struct{}    // group
	valueWs  map[string]map[*watcher]struct{}    // key
	leaders  map[string]*keyLeader

	wg sync.WaitGroup // registration and watch goroutines
}

type registration struct {
	data []byte
}

type watcher struct {
	changed chan struct{} // 1-buffered: "the group changed since you last looked"
}

// keyLeader is the leadership state of one key.
type keyLeader struct {
	holder   *leadership
	released chan struct{} // closed (and replaced) when the holder gives up
}

// New opens (or creates) the coordinator file at opts.Path and locks it.
func New(opts Options) (*Coordinator, error) {
	if opts.Path == "" {
		return nil, errors.New("single coordinator: options: path is empty")
	}
	if opts.SyncDir == nil {
		opts.SyncDir = durable.SyncDir
	}
	if err := durable.MkdirAll(filepath.Dir(opts.Path), 0o755, opts.SyncDir); err != nil {
		return nil, fmt.Errorf("single coordinator: create directory of %s: %w", opts.Path, err)
	}
	lock, err := lockFile(opts.Path + ".lock")
	if err != nil {
		return nil, err
	}
	st, err := load(opts.Path)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	return &Coordinator{
		path:     opts.Path,
		syncDir:  opts.SyncDir,
		lock:     lock,
		done:     make(chan struct{}),
		st:       st,
		members:  map[string]map[string]*registration{},
		watchers: map[string]map[*watcher]struct{}{},
		valueWs:  map[string]map[*watcher]struct{}{},
		leaders:  map[string]*keyLeader{},
	}, nil
}

// lockFile locks path for this process (flock), so that the error a second process gets
// names the one holding it.
func lockFile(path string) (*os.File, error) {
	f, err := flock.Take(path)
	var busy *flock.Busy
	switch {
	case errors.As(err, &busy):
		return nil, fmt.Errorf("single coordinator: %s is locked by %s: only one process may use a single-node coordinator file; stop it or use ZooKeeper", path, busy.Holder)
	case err != nil:
		return nil, fmt.Errorf("single coordinator: %w", err)
	}
	return f, nil
}

func load(path string) (state, error) {
	st := state{Format: fileFormat, Values: map[string]entry{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("single coordinator: read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("single coordinator: %s is not a coordinator file: %w", path, err)
	}
	if st.Format != fileFormat {
		return st, fmt.Errorf("single coordinator: %s has format %d, this build reads format %d", path, st.Format, fileFormat)
	}
	if st.Values == nil {
		st.Values = map[string]entry{}
	}
	if st.Token < 0 {
		return st, fmt.Errorf("single coordinator: %s: negative token %d", path, st.Token)
	}
	for k, e := range st.Values {
		if err := keypath.Check(k); err != nil {
			return st, fmt.Errorf("single coordinator: %s: %w", path, err)
		}
		if e.Version < 0 {
			return st, fmt.Errorf("single coordinator: %s: key %q has negative version %d", path, k, e.Version)
		}
	}
	return st, nil
}

// save writes the state atomically: a reader (or a crash) sees the old file or the new one,
// never a torn one. Called with mu held.
func (c *Coordinator) save() error {
	b, err := json.MarshalIndent(&c.st, "", " ")
	if err != nil {
		return fmt.Errorf("single coordinator: encode state: %w", err)
	}
	dir := filepath.Dir(c.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(c.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("single coordinator: write %s: %w", c.path, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return fmt.Errorf("single coordinator: write %s: %w", c.path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmpName, c.path); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("single coordinator: write %s: %w", c.path, err)
	}
	// The rename is durable only once the directory is synced: until then a power loss
	// can bring back the old file, and what was just committed would be lost.
	if err := c.syncDir(dir); err != nil {
		return fmt.Errorf("single coordinator: write %s: %w", c.path, err)
	}
	return nil
}

// Close ends memberships, leaderships and watches, and releases the file lock.
// It is idempotent and waits for the coordinator's goroutines.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	close(c.done)
	for _, kl := range c.leaders {
		if kl.holder != nil {
			kl.holder.lose()
		}
	}
	c.leaders = map[string]*keyLeader{}
	c.members = map[string]map[string]*registration{}
	c.mu.Unlock()

	c.wg.Wait()
	if err := c.lock.Close(); err != nil { // closing the descriptor releases the flock
		return fmt.Errorf("single coordinator: release lock: %w", err)
	}
	return nil
}

// begin checks that the coordinator is open and ctx is live; it returns with mu held.
func (c *Coordinator) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return coord.ErrClosed
	}
	return nil
}

// Get returns the value of key, or coord.ErrNotFound.
func (c *Coordinator) Get(ctx context.Context, key string) (coord.Value, error) {
	if err := keypath.Check(key); err != nil {
		return coord.Value{}, err
	}
	if err := c.begin(ctx); err != nil {
		return coord.Value{}, err
	}
	defer c.mu.Unlock()
	e, ok := c.st.Values[key]
	if !ok {
		return coord.Value{}, fmt.Errorf("get %s: %w", key, coord.ErrNotFound)
	}
	return coord.Value{Data: slices.Clone(e.Data), Version: e.Version}, nil
}

// Put writes key if its version matches and returns the new version. Versions start at
// 0 and grow by one per write, as ZooKeeper's do.
func (c *Coordinator) Put(ctx context.Context, key string, data []byte, version int64) (int64, error) {
	if err := keypath.Check(key); err != nil {
		return 0, err
	}
	if version < coord.AnyVersion {
		return 0, fmt.Errorf("put %s: invalid version %d", key, version)
	}
	if err := keypath.CheckData(data); err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	if err := c.begin(ctx); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	old, exists := c.st.Values[key]
	next := int64(0)
	switch {
	case version == coord.NoVersion && exists:
		return 0, fmt.Errorf("create %s: key exists: %w", key, coord.ErrVersionConflict)
	case version >= 0 && !exists:
		return 0, fmt.Errorf("put %s at version %d: key absent: %w", key, version, coord.ErrVersionConflict)
	case version >= 0 && old.Version != version:
		return 0, fmt.Errorf("put %s at version %d: current version is %d: %w", key, version, old.Version, coord.ErrVersionConflict)
	case exists:
		next = old.Version + 1
	}
	c.st.Values[key] = entry{Data: slices.Clone(data), Version: next}
	if err := c.save(); err != nil {
		if exists {
			c.st.Values[key] = old
		} else {
			delete(c.st.Values, key)
		}
		return 0, err
	}
	wake(c.valueWs[key])
	return next, nil
}

// Delete removes key and the keys nested under it, if key's version matches.
func (c *Coordinator) Delete(ctx context.Context, key string, version int64) error {
	if err := keypath.Check(key); err != nil {
		return err
	}
	if err := c.begin(ctx); err != nil {
		return err
	}
	defer c.mu.Unlock()
	e, exists := c.st.Values[key]
	children := c.nested(key)
	switch {
	case !exists && (version != coord.AnyVersion || len(children) == 0):
		return fmt.Errorf("delete %s: %w", key, coord.ErrNotFound)
	case version != coord.AnyVersion && e.Version != version:
		return fmt.Errorf("delete %s at version %d: current version is %d: %w", key, version, e.Version, coord.ErrVersionConflict)
	}
	removed := map[string]entry{}
	if exists {
		removed[key] = e
	}
	for _, k := range children {
		removed[k] = c.st.Values[k]
	}
	for k := range removed {
		delete(c.st.Values, k)
	}
	if err := c.save(); err != nil {
		for k, e := range removed {
			c.st.Values[k] = e
		}
		return err
	}
	for k := range removed {
		wake(c.valueWs[k])
	}
	return nil
}

// nested returns the keys under key. Called with mu held.
func (c *Coordinator) nested(key string) []string {
	var out []string
	prefix := key + "/"
	for k := range c.st.Values {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// List returns the sorted names directly under key: the first segment after key of every
// key nested under it. A key with nothing under it has no children.
func (c *Coordinator) List(ctx context.Context, key string) ([]string, error) {
	if err := keypath.Check(key); err != nil {
		return nil, err
	}
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	seen := map[string]bool{}
	names := []string{}
	for _, k := range c.nested(key) {
		name, _, _ := strings.Cut(k[len(key)+1:], "/")
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Register makes m a member of group until ctx ends or the coordinator closes.
func (c *Coordinator) Register(ctx context.Context, group string, m coord.Member) error {
	if err := keypath.Check(group); err != nil {
		return err
	}
	if err := keypath.CheckName(m.ID); err != nil {
		return fmt.Errorf("register in %s: member id: %w", group, err)
	}
	if err := keypath.CheckData(m.Data); err != nil {
		return fmt.Errorf("register %s in %s: %w", m.ID, group, err)
	}
	if err := c.begin(ctx); err != nil {
		return err
	}
	defer c.mu.Unlock()
	g := c.members[group]
	if g == nil {
		g = map[string]*registration{}
		c.members[group] = g
	}
	if _, ok := g[m.ID]; ok {
		return fmt.Errorf("register %s in %s: %w", m.ID, group, coord.ErrExists)
	}
	r := &registration{data: slices.Clone(m.Data)}
	g[m.ID] = r
	c.notify(group)

	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-ctx.Done():
		case <-c.done:
			return // Close dropped every member and ends the watches.
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.members[group][m.ID] == r {
			delete(c.members[group], m.ID)
			if len(c.members[group]) == 0 {
				delete(c.members, group)
			}
			c.notify(group)
		}
	}()
	return nil
}

// notify wakes the watchers of group. Called with mu held.
func (c *Coordinator) notify(group string) { wake(c.watchers[group]) }

// wake signals each watcher. Called with mu held.
func wake(ws map[*watcher]struct{}) {
	for w := range ws {
		select {
		case w.changed <- struct{}{}:
		default: // already pending: the watcher will read the latest anyway
		}
	}
}

// addWatcher adds a watcher of key to set, with a signal pending for its first look, and
// counts its goroutine in. Called with mu held.
func (c *Coordinator) addWatcher(set map[string]map[*watcher]struct{}, key string) *watcher {
	w := &watcher{changed: make(chan struct{}, 1)}
	w.changed <- struct{}{}
	if set[key] == nil {
		set[key] = map[*watcher]struct{}{}
	}
	set[key][w] = struct{}{}
	c.wg.Add(1)
	return w
}

// dropWatcher removes w from set. Called with mu held.
func dropWatcher(set map[string]map[*watcher]struct{}, key string, w *watcher) {
	delete(set[key], w)
	if len(set[key]) == 0 {
		delete(set, key)
	}
}

// WatchValue signals at once and after each write or delete of key, until ctx ends or
// the coordinator closes; then it closes the channel.
func (c *Coordinator) WatchValue(ctx context.Context, key string) (<-chan struct{}, error) {
	if err := keypath.Check(key); err != nil {
		return nil, err
	}
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	w := c.addWatcher(c.valueWs, key)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		select {
		case <-ctx.Done():
		case <-c.done:
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		dropWatcher(c.valueWs, key, w)
		close(w.changed) // under mu: wake sends under it too
	}()
	return w.changed, nil
}

// list returns group's members sorted by ID. Called with mu held.
func (c *Coordinator) list(group string) []coord.Member {
	out := []coord.Member{}
	for id, r := range c.members[group] {
		out = append(out, coord.Member{ID: id, Data: slices.Clone(r.data)})
	}
	slices.SortFunc(out, func(a, b coord.Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Members lists the live members of group, sorted by ID.
func (c *Coordinator) Members(ctx context.Context, group string) ([]coord.Member, error) {
	if err := keypath.Check(group); err != nil {
		return nil, err
	}
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	return c.list(group), nil
}

// WatchMembers sends the current members of group and then the list after each change,
// until ctx ends or the coordinator closes. Changes that happen while the receiver is busy
// are coalesced: it always receives the latest list.
func (c *Coordinator) WatchMembers(ctx context.Context, group string) (<-chan []coord.Member, error) {
	if err := keypath.Check(group); err != nil {
		return nil, err
	}
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	w := c.addWatcher(c.watchers, group)
	c.mu.Unlock()

	out := make(chan []coord.Member)
	go func() {
		defer c.wg.Done()
		defer close(out)
		defer func() {
			c.mu.Lock()
			dropWatcher(c.watchers, group, w)
			c.mu.Unlock()
		}()
		var last []coord.Member
		first := true
		for {
			select {
			case <-w.changed:
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
			c.mu.Lock()
			cur := c.list(group)
			c.mu.Unlock()
			if !first && sameMembers(cur, last) {
				continue
			}
			first = false
			select {
			case out <- cur:
				last = cur
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
		}
	}()
	return out, nil
}

func sameMembers(a, b []coord.Member) bool {
	return slices.EqualFunc(a, b, func(x, y coord.Member) bool {
		return x.ID == y.ID && string(x.Data) == string(y.Data)
	})
}

// leadership is one held leadership.
type leadership struct {
	c     *Coordinator
	key   string
	data  []byte
	token int64
	lost  chan struct{}
	once  sync.Once
}

func (l *leadership) Lost() <-chan struct{} { return l.lost }
func (l *leadership) Token() int64          { return l.token }
func (l *leadership) lose()                 { l.once.Do(func() { close(l.lost) }) }

// Resign releases the key so the next candidate may lead. Idempotent.
func (l *leadership) Resign(context.Context) error {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if kl := c.leaders[l.key]; kl != nil && kl.holder == l {
		// Lost closes before the next candidate can win: both happen under mu, Lost first.
		l.lose()
		kl.holder = nil
		close(kl.released)
		kl.released = make(chan struct{})
	}
	l.lose()
	return nil
}

// Campaign returns at once when nobody in this process holds key; otherwise it waits
// for the holder to resign (or for ctx or Close).
func (c *Coordinator) Campaign(ctx context.Context, key string, data []byte) (coord.Leadership, error) {
	if err := keypath.Check(key); err != nil {
		return nil, err
	}
	if err := keypath.CheckData(data); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", key, err)
	}
	for {
		if err := c.begin(ctx); err != nil {
			return nil, err
		}
		kl := c.leaders[key]
		if kl == nil {
			kl = &keyLeader{released: make(chan struct{})}
			c.leaders[key] = kl
		}
		if kl.holder == nil {
			c.st.Token++
			if err := c.save(); err != nil {
				c.st.Token--
				c.mu.Unlock()
				return nil, fmt.Errorf("campaign %s: persist fencing token: %w", key, err)
			}
			l := &leadership{c: c, key: key, data: slices.Clone(data), token: c.st.Token, lost: make(chan struct{})}
			kl.holder = l
			c.mu.Unlock()
			return l, nil
		}
		released := kl.released
		c.mu.Unlock()
		select {
		case <-released:
		case <-ctx.Done():
			return nil, fmt.Errorf("campaign %s: %w", key, ctx.Err())
		case <-c.done:
			return nil, fmt.Errorf("campaign %s: %w", key, coord.ErrClosed)
		}
	}
}

// Leader returns the data of key's current holder, or coord.ErrNotFound.
func (c *Coordinator) Leader(ctx context.Context, key string) ([]byte, error) {
	if err := keypath.Check(key); err != nil {
		return nil, err
	}
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if kl := c.leaders[key]; kl != nil && kl.holder != nil {
		return slices.Clone(kl.holder.data), nil
	}
	return nil, fmt.Errorf("leader of %s: %w", key, coord.ErrNotFound)
}
