// Package memory is the in-process bus.Bus of the embedded shape (`make run`, `binlake
// up`): the same delivery semantics as bus/kafka, checked by the same bustest suite,
// without a broker.
//
// Each topic keeps a log per partition; a message goes to the partition chosen by a
// hash of its key, so one key's messages stay in order. Each consumer group keeps its
// committed position per partition and shares the partitions among its live members.
// A member reads at the group's committed position and has at most one message per
// partition in flight, so a message reaches a second member only if the first member's
// handler failed (at-least-once, like Kafka, minus Kafka's rebalance duplicates).
// A group comes into being at its first Subscribe, positioned by StartAt, and keeps its
// positions for the life of the Bus; nothing survives the process.
//
// Memory is bounded the way Kafka bounds disk, by retention: each partition keeps at
// most Options.RetainMessages messages and Options.RetainBytes bytes of keys and values
// (DefaultRetainMessages and DefaultRetainBytes, whichever is reached first), and
// publishing beyond that drops the partition's oldest messages. The newest message is
// always kept, as Kafka keeps its active segment. Offsets are never reused: a trimmed
// log keeps counting from where it was, and its first retained offset is its start.
// A new StartFirst group begins at the start. A group whose committed position fell
// below the start (it was slower than retention) continues from the start, as Kafka
// does with auto.offset.reset=earliest: the trimmed messages are lost to it, which is
// counted in Stats and logged at Debug. Retention is the only way a committed message
// is not delivered to a group; every retained one still is, at least once.
package memory

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/internal/check"
)

// DefaultMaxMessageBytes is the size limit of topics that set none: Kafka's default
// (message.max.bytes), so a message accepted here is accepted there.
const DefaultMaxMessageBytes = 1048588

// Retention defaults, per partition. At the agent's default interval `binlake up`
// publishes about 15 MB a day, so 64 MiB keeps several days: far more than a
// subscriber that is merely slow needs, and a small bound for a process that runs
// for months.
const (
	DefaultRetainMessages = 100_000
	DefaultRetainBytes    = 64 << 20
)

// Options configures a Bus.
type Options struct {
	// MaxMessageBytes limits len(Key)+len(Value) on topics whose TopicSpec sets no
	// limit. DefaultMaxMessageBytes when zero.
	MaxMessageBytes int
	// RetainMessages is how many messages each partition keeps at most; older ones
	// are dropped. DefaultRetainMessages when zero.
	RetainMessages int
	// RetainBytes bounds the len(Key)+len(Value) that each partition keeps; older
	// messages are dropped, though the newest is always kept. DefaultRetainBytes when
	// zero.
	RetainBytes int64
	// Logger receives Debug records when a group falls behind retention; nil logs
	// nothing.
	Logger *slog.Logger
}

// Stats counts what retention did since New.
type Stats struct {
	// Trimmed is the number of messages dropped from the logs by retention.
	Trimmed int64
	// Resets is how many times a group's position was moved up to the start of a
	// trimmed log, and Skipped how many messages those groups never received.
	Resets  int64
	Skipped int64
}

// Bus is an in-process message bus. The zero value is not usable; call New.
type Bus struct {
	maxBytes    int
	retainMsgs  int
	retainBytes int64
	logger      *slog.Logger
	trimmed     atomic.Int64
	resets      atomic.Int64
	skipped     atomic.Int64

	mu     sync.Mutex
	topics map[string]*topic

	closeOnce sync.Once
	closed    chan struct{}
}

var (
	_ bus.Bus        = (*Bus)(nil)
	_ bus.Publisher  = (*publisher)(nil)
	_ bus.Subscriber = (*subscriber)(nil)
)

// New returns an empty bus.
func New(opts Options) (*Bus, error) {
	if opts.MaxMessageBytes < 0 {
		return nil, fmt.Errorf("memory bus: max message bytes %d is negative", opts.MaxMessageBytes)
	}
	if opts.RetainMessages < 0 {
		return nil, fmt.Errorf("memory bus: retain messages %d is negative", opts.RetainMessages)
	}
	if opts.RetainBytes < 0 {
		return nil, fmt.Errorf("memory bus: retain bytes %d is negative", opts.RetainBytes)
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.RetainMessages == 0 {
		opts.RetainMessages = DefaultRetainMessages
	}
	if opts.RetainBytes == 0 {
		opts.RetainBytes = DefaultRetainBytes
	}
	if opts.Logger != nil {
		opts.Logger = opts.Logger.With("component", "bus.memory")
	}
	return &Bus{
		maxBytes:    opts.MaxMessageBytes,
		retainMsgs:  opts.RetainMessages,
		retainBytes: opts.RetainBytes,
		logger:      opts.Logger,
		topics:      map[string]*topic{},
		closed:      make(chan struct{}),
	}, nil
}

// reset counts and logs (outside any lock) a group moved from position to start.
func (b *Bus) reset(topic, group string, partition int, position, start int64) {
	b.resets.Add(1)
	b.skipped.Add(start - position)
	if b.logger != nil {
		b.logger.Debug("consumer group fell behind retention; continuing from the log start",
			"topic", topic, "group", group, "partition", partition,
			"position", position, "start", start, "skipped", start-position)
	}
}

// Stats returns what retention did so far.
func (b *Bus) Stats() Stats {
	return Stats{Trimmed: b.trimmed.Load(), Resets: b.resets.Load(), Skipped: b.skipped.Load()}
}

func (b *Bus) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// CreateTopic creates the topic unless it exists; an existing topic keeps its spec,
// as Kafka keeps an existing topic's. Replication is accepted and has no effect.
func (b *Bus) CreateTopic(ctx context.Context, spec bus.TopicSpec) error {
	if b.isClosed() {
		return bus.ErrClosed
	}
	spec, err := check.TopicSpec(spec)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	maxBytes := spec.MaxMessageBytes
	if maxBytes == 0 {
		maxBytes = b.maxBytes
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[spec.Name]; !ok {
		b.topics[spec.Name] = &topic{
			name:     spec.Name,
			maxBytes: maxBytes,
			parts:    make([]partition, spec.Partitions),
			groups:   map[string]*group{},
			changed:  make(chan struct{}),
		}
	}
	return nil
}

func (b *Bus) topic(name string) (*topic, error) {
	b.mu.Lock()
	t, ok := b.topics[name]
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("topic %q: %w", name, bus.ErrUnknownTopic)
	}
	return t, nil
}

// Publisher returns a publisher for every topic of the bus.
func (b *Bus) Publisher() (bus.Publisher, error) {
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	return &publisher{b: b}, nil
}

// Subscriber returns a subscriber of an existing topic.
func (b *Bus) Subscriber(opts bus.SubscribeOptions) (bus.Subscriber, error) {
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	if err := check.SubscribeOptions(opts); err != nil {
		return nil, err
	}
	t, err := b.topic(opts.Topic)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return &subscriber{b: b, t: t, opts: opts, closed: make(chan struct{})}, nil
}

// Close ends every running subscription (Subscribe returns ErrClosed) and makes every
// later call fail with ErrClosed. It does not wait for handlers that are running.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return nil
}

// topic is one topic's log and its consumer groups. mu guards everything but the
// fields set at creation.
type topic struct {
	name     string
	maxBytes int

	mu     sync.Mutex
	parts  []partition
	rr     int // next partition for messages without a key
	groups map[string]*group
	// changed is closed and replaced whenever a waiting member may have work: a
	// message was appended, a group's membership changed, or a partition was released
	// by a member that no longer owns it.
	changed chan struct{}
}

func (t *topic) broadcastLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// partitionLocked chooses a message's partition: FNV-1a of the key, so equal keys
// share a partition; round-robin for messages without a key.
func (t *topic) partitionLocked(key []byte) int {
	n := len(t.parts)
	if len(key) == 0 {
		p := t.rr % n
		t.rr++
		return p
	}
	h := uint32(2166136261)
	for _, c := range key {
		h ^= uint32(c)
		h *= 16777619
	}
	return int(h % uint32(n))
}

// partition is one partition's retained log: a ring buffer of the messages at offsets
// start..end()-1, oldest at buf[head]. A ring rather than a slice that is appended to
// and resliced from the front, so that a full log trims and appends without copying
// or allocating.
type partition struct {
	buf   []bus.Message // len is a power of two (or zero)
	head  int           // index in buf of the message at offset start
	n     int           // retained messages
	start int64         // offset of the oldest retained message
	bytes int64         // retained len(Key)+len(Value)
}

func (p *partition) end() int64 { return p.start + int64(p.n) }

// at returns the message at offset off, which must be in [start, end()).
func (p *partition) at(off int64) bus.Message {
	return p.buf[(p.head+int(off-p.start))&(len(p.buf)-1)]
}

// push appends m and gives it the next offset.
func (p *partition) push(m bus.Message) {
	if p.n == len(p.buf) {
		buf := make([]bus.Message, max(16, 2*len(p.buf)))
		for i := range p.n {
			buf[i] = p.buf[(p.head+i)&(len(p.buf)-1)]
		}
		p.buf, p.head = buf, 0
	}
	m.Offset = p.end()
	p.buf[(p.head+p.n)&(len(p.buf)-1)] = m
	p.n++
	p.bytes += size(m)
}

// trim drops the oldest messages until at most maxMsgs and maxBytes are retained,
// keeping the newest message whatever its size, and returns how many it dropped.
// A slot is cleared when dropped, so its key and value can be collected.
func (p *partition) trim(maxMsgs int, maxBytes int64) int {
	dropped := 0
	for p.n > 1 && (p.n > maxMsgs || p.bytes > maxBytes) {
		p.bytes -= size(p.buf[p.head])
		p.buf[p.head] = bus.Message{}
		p.head = (p.head + 1) & (len(p.buf) - 1)
		p.n--
		p.start++
		dropped++
	}
	return dropped
}

func size(m bus.Message) int64 { return int64(len(m.Key) + len(m.Value)) }

// group is one consumer group of a topic.
type group struct {
	next    []int64 // committed position: the next offset to deliver, per partition
	busy    []bool  // a member is handling this partition's next message
	members []*member
}

// member is one Subscribe call in a group. It is not zero-sized: pointers to distinct
// zero-sized values may compare equal, and members are told apart by pointer.
type member struct{ _ byte }

// ownerLocked shares partitions among members in join order, round-robin.
func (g *group) ownerLocked(p int) *member {
	if len(g.members) == 0 {
		return nil
	}
	return g.members[p%len(g.members)]
}

type publisher struct {
	b      *Bus
	closed atomic.Bool
}

// Publish appends msgs to their topics. It checks every message (topic exists, size
// within the topic's limit) before appending any, so a failed Publish writes nothing.
// Keys and values are copied: the caller may reuse its buffers.
func (p *publisher) Publish(ctx context.Context, msgs ...bus.Message) error {
	if p.closed.Load() || p.b.isClosed() {
		return bus.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	topics := make([]*topic, len(msgs))
	for i, m := range msgs {
		t, err := p.b.topic(m.Topic)
		if err != nil {
			return fmt.Errorf("publish message %d: %w", i, err)
		}
		if n := len(m.Key) + len(m.Value); n > t.maxBytes {
			return fmt.Errorf("publish message %d to %s: %d bytes exceed the topic's limit of %d: %w",
				i, t.name, n, t.maxBytes, bus.ErrMessageTooLarge)
		}
		topics[i] = t
	}
	now := time.Now()
	var locked *topic
	for i, m := range msgs {
		if t := topics[i]; t != locked {
			if locked != nil {
				locked.broadcastLocked()
				locked.mu.Unlock()
			}
			locked = t
			t.mu.Lock()
		}
		if m.Time.IsZero() {
			m.Time = now
		}
		m.Key = clone(m.Key)
		m.Value = clone(m.Value)
		m.Partition = locked.partitionLocked(m.Key)
		part := &locked.parts[m.Partition]
		part.push(m)
		// Trimming right away keeps the bound exact; a group whose position is now
		// below the start finds out when it next reads (Subscribe).
		if n := part.trim(p.b.retainMsgs, p.b.retainBytes); n > 0 {
			p.b.trimmed.Add(int64(n))
		}
	}
	if locked != nil {
		locked.broadcastLocked()
		locked.mu.Unlock()
	}
	return nil
}

// Close makes later Publish calls fail with ErrClosed.
func (p *publisher) Close() error {
	p.closed.Store(true)
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

type subscriber struct {
	b    *Bus
	t    *topic
	opts bus.SubscribeOptions

	running   atomic.Bool
	closeOnce sync.Once
	closed    chan struct{}
}

// Subscribe joins the group and delivers messages until ctx ends (nil), the handler
// fails (its error), or the subscriber or bus is closed (ErrClosed). Either way the
// member leaves the group, so its partitions go to the remaining members.
func (s *subscriber) Subscribe(ctx context.Context, h bus.Handler) error {
	select {
	case <-s.closed:
		return bus.ErrClosed
	default:
	}
	if s.b.isClosed() {
		return bus.ErrClosed
	}
	if h == nil {
		return fmt.Errorf("subscribe to %s: nil handler", s.opts.Topic)
	}
	if !s.running.CompareAndSwap(false, true) {
		return fmt.Errorf("subscribe to %s as group %s: this subscriber is already subscribing", s.opts.Topic, s.opts.Group)
	}
	defer s.running.Store(false)

	t := s.t
	me := &member{}
	g := s.join(me)
	defer s.leave(g, me)

	next := 0 // partition to try first, so busy partitions do not starve the others
	for {
		if ctx.Err() != nil {
			return nil
		}
		t.mu.Lock()
		p := -1
		for i := range len(t.parts) {
			q := (next + i) % len(t.parts)
			if g.ownerLocked(q) == me && !g.busy[q] && g.next[q] < t.parts[q].end() {
				p = q
				break
			}
		}
		if p < 0 {
			changed := t.changed
			t.mu.Unlock()
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil
			case <-s.closed:
				return bus.ErrClosed
			case <-s.b.closed:
				return bus.ErrClosed
			}
		}
		part := &t.parts[p]
		behind := g.next[p]
		if behind < part.start {
			// Retention dropped messages this group had not committed: continue from
			// the oldest retained one, as Kafka's auto.offset.reset=earliest would.
			g.next[p] = part.start
		}
		g.busy[p] = true
		m := part.at(g.next[p])
		t.mu.Unlock()
		if behind < m.Offset {
			s.b.reset(t.name, s.opts.Group, p, behind, m.Offset)
		}
		next = p + 1

		// The handler gets its own copies, as it would from Kafka: a handler that
		// modifies them must not change what other groups receive.
		m.Key, m.Value = clone(m.Key), clone(m.Value)
		err := h(ctx, m)

		t.mu.Lock()
		g.busy[p] = false
		if err == nil {
			g.next[p]++
		}
		if g.ownerLocked(p) != me {
			t.broadcastLocked() // the new owner waits for this partition
		}
		t.mu.Unlock()

		switch {
		case err == nil:
		case check.Canceled(ctx, err):
			return nil
		default:
			return err
		}
		// A closed subscriber or bus stops between messages, not only when idle.
		select {
		case <-s.closed:
			return bus.ErrClosed
		case <-s.b.closed:
			return bus.ErrClosed
		default:
		}
	}
}

// join adds me to the group, creating the group at StartAt if it is new.
func (s *subscriber) join(me *member) *group {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.groups[s.opts.Group]
	if !ok {
		g = &group{next: make([]int64, len(t.parts)), busy: make([]bool, len(t.parts))}
		for p := range t.parts {
			g.next[p] = t.parts[p].start // the oldest retained message
			if s.opts.StartAt == bus.StartLast {
				g.next[p] = t.parts[p].end()
			}
		}
		t.groups[s.opts.Group] = g
	}
	g.members = append(g.members, me)
	t.broadcastLocked()
	return g
}

func (s *subscriber) leave(g *group, me *member) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, m := range g.members {
		if m == me {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	t.broadcastLocked()
}

// Close ends a running Subscribe (it returns ErrClosed) and makes later calls fail
// with ErrClosed. It does not wait for a handler that is running.
func (s *subscriber) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}
