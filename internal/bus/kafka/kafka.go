// Package kafka is the bus.Bus of the distributed shape, on Apache Kafka through
// segmentio/kafka-go. It passes the same bustest suite as bus/memory.
//
// Publishing goes through one batching kafka.Writer per Publisher with acks from all
// in-sync replicas. Subscribing joins a consumer group (kafka.ConsumerGroup) and reads
// each assigned partition with a reader and a worker goroutine of its own; positions are
// committed per partition up to the oldest message not yet done (its handler has not
// returned nil, or a bus.Defer ack is outstanding), once per CommitInterval and when the
// partitions are given up (at-least-once). Topics are never auto-created: a typo in a
// topic name fails with bus.ErrUnknownTopic instead of creating a topic.
package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/segmentio/kafka-go/sasl"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/internal/check"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/logging"
)

// Options configures a Bus. Zero fields take the defaults named on them.
//
// The consumer-group timings default to values that let a group settle within a
// second or two after a member joins or leaves (kafka-go's own defaults take tens of
// seconds); they cost a heartbeat per second and a fetch request per MaxWait per
// idle partition.
type Options struct {
	// Brokers are the bootstrap brokers, host:port. Required.
	Brokers []string
	// ClientID names this client in broker logs and quotas. "binlake" when empty.
	ClientID string
	// TLS, when set, makes every connection to the brokers use TLS (its ServerName, when
	// empty, is the host of the address dialled). FromConfig builds it from a tls: key.
	TLS *tls.Config
	// SASL, when set, authenticates every connection to the brokers.
	SASL *SASL

	// BatchSize is the most messages per partition in one produce request. 100.
	BatchSize int
	// BatchBytes is the most bytes per partition in one produce request, and so the
	// largest message the writer sends (larger ones fail with bus.ErrMessageTooLarge
	// before reaching the broker). 1 MiB, Kafka's default message.max.bytes. Keep it
	// at most the smallest max.message.bytes of the topics written: the broker rejects
	// a whole batch larger than its topic's limit.
	BatchBytes int64
	// BatchTimeout is how long a partition's batch waits for more messages before it
	// is sent; a synchronous Publish waits at most this long for company. 5 ms, the
	// linger.ms of Kafka's Java producer.
	BatchTimeout time.Duration
	// WriteTimeout bounds one produce request. 10 s.
	WriteTimeout time.Duration
	// Compression is the codec of produced record batches: none (the default), gzip,
	// snappy, lz4 or zstd.
	Compression string
	// MaxAttempts is how often a produce request is tried on retriable errors. 5. The
	// writer retries in the background, even after the Publish call that queued the
	// request returned on its context: a caller that must stop writing at a known time
	// (a wave that lost its leadership) sets 1 and a WriteTimeout below its deadline.
	MaxAttempts int

	// DialTimeout bounds opening a connection to a broker. 5 s.
	DialTimeout time.Duration
	// MetadataTTL is how old the cached cluster metadata of publishers may get; a
	// topic created by another process becomes writable at most this long after. 2 s.
	MetadataTTL time.Duration

	// MaxWait is how long a fetch waits on the broker for new messages. 1 s. A message
	// that comes meanwhile ends the wait (one byte is enough), so it costs no latency;
	// kafka-go gives the answer a quarter of it beyond the broker's wait before it calls
	// the read timed out, and at 250 ms (a 62 ms margin) a judge on a busy host logged an
	// "i/o timeout" and reconnected every few seconds on an idle topic.
	MaxWait time.Duration
	// MaxBytes is the most bytes one fetch returns per partition. 1 MiB.
	MaxBytes int
	// HeartbeatInterval is how often a group member tells the coordinator it is alive,
	// and so how fast it learns that the group rebalances. 500 ms.
	HeartbeatInterval time.Duration
	// SessionTimeout is how long the coordinator waits for a heartbeat before it
	// removes a member. 10 s; the broker's group.min.session.timeout.ms (6 s by
	// default) is the floor.
	SessionTimeout time.Duration
	// RebalanceTimeout is how long the coordinator waits for members to rejoin during
	// a rebalance. 10 s.
	RebalanceTimeout time.Duration
	// JoinGroupBackoff is the pause before rejoining a group after an error. 250 ms.
	JoinGroupBackoff time.Duration
	// CommitInterval is how often a subscription commits its group's positions: per
	// partition, up to the oldest message not yet done (its handler returned nil and any
	// bus.Defer ack was called), one request per interval for all partitions, and a last
	// time when the subscription ends or a rebalance takes its partitions (at-least-once).
	// A crash redelivers up to an interval of done messages. 1 s: at a million points a
	// second, a commit per message would cost a broker round trip per batch.
	CommitInterval time.Duration
	// ReadBackoffMin and ReadBackoffMax bound the pause between fetches that returned
	// nothing. 50 ms and 500 ms.
	ReadBackoffMin, ReadBackoffMax time.Duration

	// Logger receives kafka-go's log lines (Debug) and error lines (Warn).
	// slog.Default() when nil.
	Logger *slog.Logger
}

func (o *Options) setDefaults() error {
	if len(o.Brokers) == 0 {
		return errors.New("kafka bus: no brokers configured")
	}
	for _, b := range o.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil || strings.Contains(b, "@") {
			// Not err: SplitHostPort's quotes the address unredacted. A '@' is a user
			// (and maybe a password) pasted in, which the logs would show.
			return fmt.Errorf("kafka bus: broker %q is not host:port (without a user or password)", config.Redact(b))
		}
	}
	for name, v := range map[string]int64{
		"batch size": int64(o.BatchSize), "batch bytes": o.BatchBytes, "batch timeout": int64(o.BatchTimeout),
		"write timeout": int64(o.WriteTimeout), "max attempts": int64(o.MaxAttempts), "dial timeout": int64(o.DialTimeout),
		"metadata TTL": int64(o.MetadataTTL), "max wait": int64(o.MaxWait), "max bytes": int64(o.MaxBytes),
		"heartbeat interval": int64(o.HeartbeatInterval), "session timeout": int64(o.SessionTimeout),
		"rebalance timeout": int64(o.RebalanceTimeout), "join group backoff": int64(o.JoinGroupBackoff),
		"read backoff min": int64(o.ReadBackoffMin), "commit interval": int64(o.CommitInterval), "read backoff max": int64(o.ReadBackoffMax),
	} {
		if v < 0 {
			return fmt.Errorf("kafka bus: %s %d is negative", name, v)
		}
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if o.ClientID == "" {
		o.ClientID = "binlake"
	}
	if o.SASL != nil {
		if _, err := o.SASL.mechanism(); err != nil {
			return err
		}
	}
	if _, err := compressionCodec(o.Compression); err != nil {
		return err
	}
	if o.BatchSize == 0 {
		o.BatchSize = 100
	}
	if o.BatchBytes == 0 {
		o.BatchBytes = 1 << 20
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 5
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = 1 << 20
	}
	def(&o.BatchTimeout, 5*time.Millisecond)
	def(&o.WriteTimeout, 10*time.Second)
	def(&o.DialTimeout, 5*time.Second)
	def(&o.MetadataTTL, 2*time.Second)
	def(&o.MaxWait, time.Second)
	def(&o.HeartbeatInterval, 500*time.Millisecond)
	def(&o.SessionTimeout, 10*time.Second)
	def(&o.RebalanceTimeout, 10*time.Second)
	def(&o.JoinGroupBackoff, 250*time.Millisecond)
	def(&o.CommitInterval, time.Second)
	def(&o.ReadBackoffMin, 50*time.Millisecond)
	def(&o.ReadBackoffMax, 500*time.Millisecond)
	if o.ReadBackoffMax < o.ReadBackoffMin {
		return fmt.Errorf("kafka bus: read backoff max %v is below min %v", o.ReadBackoffMax, o.ReadBackoffMin)
	}
	if o.HeartbeatInterval >= o.SessionTimeout {
		return fmt.Errorf("kafka bus: heartbeat interval %v must be below session timeout %v", o.HeartbeatInterval, o.SessionTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// adminTimeout is the least time a topic's lookup, creation and leaders' answer are
// given: the Java AdminClient's request.timeout.ms.
const adminTimeout = 30 * time.Second

// Bus is a connection to a Kafka cluster.
type Bus struct {
	opts      Options
	log       *slog.Logger
	addr      net.Addr
	transport *kafkago.Transport // shared by the client and every writer: one metadata cache
	client    *kafkago.Client
	// admin creates topics and waits for their leaders. Its timeout is not the produce
	// requests' WriteTimeout, which a wave sets to a quarter of its session (1 s in the
	// tests): a loaded cluster's controller took longer than that to create a topic, and
	// every retry timed out again. ctx still ends it when the caller gives up.
	admin  *kafkago.Client
	dialer *kafkago.Dialer
	sasl   sasl.Mechanism // nil without SASL

	// commits counts the offset-commit requests of this Bus's subscriptions.
	commits atomic.Int64
	// warns keeps kafka-go's repeated warnings to one per kind a while (loggers).
	warns *logging.Throttle

	mu          sync.Mutex
	closed      bool
	publishers  map[*publisher]struct{}
	subscribers map[*subscriber]struct{}
}

var (
	_ bus.Bus                = (*Bus)(nil)
	_ bus.Publisher          = (*publisher)(nil)
	_ bus.Partitioner        = (*publisher)(nil)
	_ bus.PartitionPublisher = (*publisher)(nil)
	_ bus.Subscriber         = (*subscriber)(nil)
)

// New returns a Bus for the brokers in opts. It does not connect yet: the first call
// that needs the cluster does.
func New(opts Options) (*Bus, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	log := opts.Logger.With("component", "bus.kafka")
	if opts.TLS != nil && opts.TLS.InsecureSkipVerify {
		log.Warn("kafka: TLS without verifying the brokers' certificates (tls.insecure_skip_verify): anyone in the path can read and change the traffic")
	}
	if opts.SASL != nil && opts.TLS == nil && strings.EqualFold(opts.SASL.Mechanism, "plain") {
		log.Warn("kafka: SASL PLAIN without TLS sends the password in clear text; add a tls: key", "user", opts.SASL.Username)
	}
	var mech sasl.Mechanism
	if opts.SASL != nil {
		var err error
		if mech, err = opts.SASL.mechanism(); err != nil {
			return nil, err
		}
	}
	dial := (&net.Dialer{Timeout: opts.DialTimeout}).DialContext
	transport := &kafkago.Transport{
		Dial:        dial,
		DialTimeout: opts.DialTimeout,
		ClientID:    opts.ClientID,
		MetadataTTL: opts.MetadataTTL,
		TLS:         opts.TLS,
		SASL:        mech,
	}
	addr := kafkago.TCP(opts.Brokers...)
	return &Bus{
		opts:      opts,
		log:       log,
		addr:      addr,
		transport: transport,
		client:    &kafkago.Client{Addr: addr, Transport: transport, Timeout: opts.WriteTimeout},
		admin:     &kafkago.Client{Addr: addr, Transport: transport, Timeout: max(opts.WriteTimeout, adminTimeout)},
		dialer: &kafkago.Dialer{ClientID: opts.ClientID, Timeout: opts.DialTimeout, DualStack: true,
			TLS: opts.TLS, SASLMechanism: mech},
		sasl:        mech,
		publishers:  map[*publisher]struct{}{},
		subscribers: map[*subscriber]struct{}{},
		warns:       &logging.Throttle{Every: warnEvery},
	}, nil
}

// CommitRequests is how many offset-commit requests this Bus's subscriptions have sent:
// with CommitInterval, about one per interval per subscription however many messages
// they handle.
func (b *Bus) CommitRequests() int64 { return b.commits.Load() }

// loggers bridge kafka-go's printf-style loggers to slog, its text as the message and
// marked lib=kafka-go: its chatter at Debug, its errors at Warn (they are retried; what finally fails is returned to the caller), each
// kind of error at most once per warnEvery while it repeats, saying how many it held.
func (b *Bus) loggers() (info, errs kafkago.Logger) {
	info = kafkago.LoggerFunc(func(format string, args ...any) {
		if b.log.Enabled(context.Background(), slog.LevelDebug) {
			b.log.Debug(fmt.Sprintf(format, args...), "lib", "kafka-go")
		}
	})
	errs = kafkago.LoggerFunc(func(format string, args ...any) {
		ok, held := b.warns.Allow(format, time.Now())
		switch {
		case !ok:
		case held > 0:
			b.log.Warn(fmt.Sprintf(format, args...), "lib", "kafka-go", "repeated", held)
		default:
			b.log.Warn(fmt.Sprintf(format, args...), "lib", "kafka-go")
		}
	})
	return info, errs
}

func (b *Bus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// CreateTopic creates the topic, or accepts an existing one as it is (but for a
// max.message.bytes below the spec's, which it raises: raiseMaxMessageBytes), and returns
// once the cluster metadata shows every partition with a leader, so a Publish right
// after it succeeds.
func (b *Bus) CreateTopic(ctx context.Context, spec bus.TopicSpec) error {
	if b.isClosed() {
		return bus.ErrClosed
	}
	spec, err := check.TopicSpec(spec)
	if err != nil {
		return err
	}
	tc := kafkago.TopicConfig{
		Topic:             spec.Name,
		NumPartitions:     spec.Partitions,
		ReplicationFactor: spec.Replication,
	}
	if spec.MaxMessageBytes > 0 {
		tc.ConfigEntries = append(tc.ConfigEntries, kafkago.ConfigEntry{
			ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(spec.MaxMessageBytes),
		})
	}
	// A topic that exists (a wave taking over an instance, a restart) is only waited
	// for: metadata is any broker's to answer, where CreateTopics goes through the
	// controller, which a loaded cluster answered after the client's timeout (the
	// instance then paused for a retry). The lookup has the admin timeout, so that a
	// slow answer does not send an existing topic to the controller after all.
	if _, ok, err := b.topicPartitions(ctx, spec.Name, b.admin.Timeout); err == nil && ok {
		b.log.Debug("topic exists", "topic", spec.Name)
		b.raiseMaxMessageBytes(ctx, spec.Name, spec.MaxMessageBytes)
		return b.waitForLeaders(ctx, spec.Name)
	}
	resp, err := b.admin.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{tc}})
	if err != nil {
		return fmt.Errorf("create topic %s: %w", spec.Name, b.explain(ctx, err))
	}
	switch err := resp.Errors[spec.Name]; {
	case err == nil:
		b.log.Info("topic created", "topic", spec.Name, "partitions", spec.Partitions, "replication", spec.Replication)
	case errors.Is(err, kafkago.TopicAlreadyExists):
		b.log.Debug("topic exists", "topic", spec.Name)
		b.raiseMaxMessageBytes(ctx, spec.Name, spec.MaxMessageBytes)
	default:
		if ke, ok := errors.AsType[kafkago.Error](err); ok && !ke.Temporary() {
			// Read as the bus being down, it was retried for ever under bus_unreachable
			// (an outside trial: a replication factor of 5 on one broker).
			return fmt.Errorf("create topic %s: %w: %w", spec.Name, bus.ErrRefused, err)
		}
		return fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	return b.waitForLeaders(ctx, spec.Name)
}

// maxMessageBytes is the topic setting that bounds a record batch, and so a message.
const maxMessageBytes = "max.message.bytes"

// TopicMaxMessageBytes returns the largest record batch topic accepts: its
// max.message.bytes as the broker applies it (the topic's own setting, else the
// broker's message.max.bytes).
func (b *Bus) TopicMaxMessageBytes(ctx context.Context, topic string) (int, error) {
	resp, err := b.admin.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: []kafkago.DescribeConfigRequestResource{{
		ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{maxMessageBytes}}}})
	if err != nil {
		return 0, fmt.Errorf("describe the config of topic %s: %w", topic, b.explain(ctx, err))
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return 0, fmt.Errorf("describe the config of topic %s: %w", topic, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == maxMessageBytes {
				n, err := strconv.Atoi(e.ConfigValue)
				if err != nil {
					return 0, fmt.Errorf("topic %s: %s is %q", topic, maxMessageBytes, e.ConfigValue)
				}
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("topic %s: the broker did not return its %s", topic, maxMessageBytes)
}

// raiseMaxMessageBytes raises an existing topic's max.message.bytes to want when it is
// lower, as CreateTopic sets it on the topics it creates: a topic created before the
// limit was raised (or by someone else) would refuse the larger messages the producer now
// sends. It never lowers it. A failure (no AlterConfigs permission, say) is logged: the
// caller can still read the limit (TopicMaxMessageBytes) and hold messages to it.
func (b *Bus) raiseMaxMessageBytes(ctx context.Context, topic string, want int) {
	if want <= 0 {
		return
	}
	have, err := b.TopicMaxMessageBytes(ctx, topic)
	if err != nil {
		b.log.Warn("could not read the topic's max.message.bytes: messages above it are refused by the broker", "topic", topic, "err", err)
		return
	}
	if have >= want {
		return
	}
	resp, err := b.admin.IncrementalAlterConfigs(ctx, &kafkago.IncrementalAlterConfigsRequest{Resources: []kafkago.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafkago.IncrementalAlterConfigsRequestConfig{{Name: maxMessageBytes, Value: strconv.Itoa(want), ConfigOperation: kafkago.ConfigOperationSet}}}}})
	if err == nil {
		for _, r := range resp.Resources {
			if r.Error != nil {
				err = r.Error
			}
		}
	}
	if err != nil {
		b.log.Warn("the topic's max.message.bytes is below the producer's limit and could not be raised: raise it on the topic",
			"topic", topic, "max.message.bytes", have, "want", want, "err", b.explain(ctx, err))
		return
	}
	// The broker applies a topic's config change after it answers (a KRaft broker once its
	// metadata catches up): a CI run read the old limit back just after the answer, and a
	// message of the new size published then is refused. So the raise is awaited, as a new
	// topic's leaders are (waitForLeaders), within raiseVisibleWithin.
	start := time.Now()
	deadline := start.Add(raiseVisibleWithin)
	for {
		now, err := b.TopicMaxMessageBytes(ctx, topic)
		if err == nil && now >= want {
			b.log.Info("the topic's max.message.bytes raised to the producer's limit", "topic", topic, "from", have, "to", want,
				"in_effect_after", time.Since(start).Round(time.Millisecond))
			return
		}
		if ctx.Err() != nil {
			b.log.Warn("stopped waiting for the topic's raised max.message.bytes to show: the caller gave up (shutting down or its deadline passed)",
				"topic", topic, "from", have, "to", want, "shown", now, "err", ctx.Err())
			return
		}
		if time.Now().After(deadline) {
			b.log.Warn("the topic's max.message.bytes was raised but the broker does not show it yet: messages above the old limit may be refused for a while",
				"topic", topic, "from", have, "to", want, "shown", now, "err", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// raiseVisibleWithin bounds how long raiseMaxMessageBytes waits for the broker to show a
// raised max.message.bytes.
const raiseVisibleWithin = 10 * time.Second

// waitForLeaders asks the cluster until the topic, which must exist, has a leader for
// every partition, and every leader acts as one. Topic creation is asynchronous in
// Kafka: without this wait the first Publish could fail with UnknownTopicOrPartition or
// LeaderNotAvailable. Each request also refreshes the shared metadata cache, which
// writers read: they see the topic once this returns.
func (b *Bus) waitForLeaders(ctx context.Context, topic string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		partitions, err := b.refreshTopic(ctx, topic)
		if err == nil {
			err = b.leadersServe(ctx, topic, partitions)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for topic %s: %w (last: %w)", topic, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// refreshTopic sends a metadata request for topic to the broker instead of answering it
// from the transport's cache, and makes the transport refresh its cache. kafka-go does
// that only for requests that allow auto-creation, so this one does: call it only for a
// topic known to exist, or a broker with auto.create.topics.enable would create it.
// It returns the topic's partition count.
func (b *Bus) refreshTopic(ctx context.Context, topic string) (int, error) {
	resp, err := b.transport.RoundTrip(ctx, b.addr, &metadata.Request{
		TopicNames:             []string{topic},
		AllowAutoTopicCreation: true,
	})
	if err != nil {
		return 0, fmt.Errorf("read metadata of %s: %w", topic, b.explain(ctx, err))
	}
	md, ok := resp.(*metadata.Response)
	if !ok {
		return 0, fmt.Errorf("read metadata of %s: unexpected response %T", topic, resp)
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.ErrorCode != 0 {
			return 0, fmt.Errorf("topic %s: %w", topic, kafkago.Error(t.ErrorCode))
		}
		if len(t.Partitions) == 0 {
			return 0, fmt.Errorf("topic %s has no partitions yet", topic)
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return 0, fmt.Errorf("topic %s partition %d: %w", topic, p.PartitionIndex, kafkago.Error(p.ErrorCode))
			}
			if p.LeaderID < 0 {
				return 0, fmt.Errorf("topic %s partition %d has no leader", topic, p.PartitionIndex)
			}
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("topic %s missing from the metadata response", topic)
}

// leadersServe asks every partition's leader for its last offset, which only a broker
// that leads the partition answers. A cold broker's metadata can name it leader seconds
// before it acts as one (KRaft applies the new topic to its metadata cache first), and a
// Publish in between fails with NotLeaderForPartition on every attempt.
func (b *Bus) leadersServe(ctx context.Context, topic string, partitions int) error {
	reqs := make([]kafkago.OffsetRequest, partitions)
	for p := range reqs {
		reqs[p] = kafkago.LastOffsetOf(p)
	}
	resp, err := b.admin.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		return fmt.Errorf("list offsets of %s: %w", topic, b.explain(ctx, err))
	}
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return fmt.Errorf("topic %s partition %d: %w", topic, po.Partition, po.Error)
		}
	}
	if n := len(resp.Topics[topic]); n != partitions {
		return fmt.Errorf("topic %s: %d of %d partitions answered", topic, n, partitions)
	}
	return nil
}

// topicExists asks the cluster, bypassing the shared metadata cache, which may predate
// a topic made by another process.
func (b *Bus) topicExists(ctx context.Context, topic string) (bool, error) {
	_, ok, err := b.topicPartitions(ctx, topic, b.opts.WriteTimeout)
	return ok, err
}

// topicPartitions is topicExists that also returns the topic's partitions, sorted,
// within timeout.
func (b *Bus) topicPartitions(ctx context.Context, topic string, timeout time.Duration) ([]int, bool, error) {
	t := &kafkago.Transport{Dial: b.transport.Dial, DialTimeout: b.opts.DialTimeout, ClientID: b.opts.ClientID,
		TLS: b.opts.TLS, SASL: b.sasl}
	defer t.CloseIdleConnections()
	c := &kafkago.Client{Addr: b.addr, Transport: t, Timeout: timeout}
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, false, fmt.Errorf("read metadata of %s: %w", topic, b.explain(ctx, err))
	}
	for _, tm := range md.Topics {
		if tm.Name == topic {
			if errors.Is(tm.Error, kafkago.UnknownTopicOrPartition) {
				return nil, false, nil
			}
			if tm.Error != nil {
				return nil, false, fmt.Errorf("read metadata of %s: %w", topic, tm.Error)
			}
			parts := make([]int, 0, len(tm.Partitions))
			for _, p := range tm.Partitions {
				parts = append(parts, p.ID)
			}
			slices.Sort(parts)
			return parts, true, nil
		}
	}
	return nil, false, nil
}

// Publisher returns a publisher with its own batching writer.
func (b *Bus) Publisher() (bus.Publisher, error) {
	info, errs := b.loggers()
	p := &publisher{b: b, w: &kafkago.Writer{
		Addr: b.addr,
		// Murmur2 is the partitioner of Kafka's Java client: a key lands on the same
		// partition whether a wave or a Java producer wrote it, which keeps one row's
		// changes in order if producers are mixed or replaced.
		Balancer:               &kafkago.Murmur2Balancer{},
		MaxAttempts:            b.opts.MaxAttempts,
		BatchSize:              b.opts.BatchSize,
		BatchBytes:             b.opts.BatchBytes,
		BatchTimeout:           b.opts.BatchTimeout,
		WriteTimeout:           b.opts.WriteTimeout,
		ReadTimeout:            b.opts.WriteTimeout,
		RequiredAcks:           kafkago.RequireAll,
		Compression:            compression(b.opts.Compression),
		Logger:                 info,
		ErrorLogger:            errs,
		Transport:              b.transport,
		AllowAutoTopicCreation: false,
	}}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, bus.ErrClosed
	}
	b.publishers[p] = struct{}{}
	return p, nil
}

// Subscriber returns a subscriber; it reaches the cluster only when it subscribes.
func (b *Bus) Subscriber(opts bus.SubscribeOptions) (bus.Subscriber, error) {
	if err := check.SubscribeOptions(opts); err != nil {
		return nil, err
	}
	s := &subscriber{b: b, opts: opts, process: memberClientID(b.dialer.ClientID)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, bus.ErrClosed
	}
	b.subscribers[s] = struct{}{}
	return s, nil
}

// Close flushes and closes every publisher, ends every subscription (Subscribe returns
// bus.ErrClosed) and drops idle connections. It is idempotent.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	pubs, subs := b.publishers, b.subscribers
	b.publishers, b.subscribers = nil, nil
	b.mu.Unlock()

	var errs []error
	for p := range pubs {
		errs = append(errs, p.Close())
	}
	for s := range subs {
		errs = append(errs, s.Close())
	}
	b.transport.CloseIdleConnections()
	return errors.Join(errs...)
}

func (b *Bus) forget(p *publisher, s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.publishers, p)
	delete(b.subscribers, s)
}

type publisher struct {
	b *Bus
	w *kafkago.Writer

	mu     sync.Mutex
	closed bool
	counts partitionCounts
}

func (p *publisher) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Publish writes msgs and returns when all in-sync replicas have them.
func (p *publisher) Publish(ctx context.Context, msgs ...bus.Message) error {
	if p.isClosed() {
		return bus.ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	kms := make([]kafkago.Message, len(msgs))
	for i, m := range msgs {
		if err := bus.CheckTopicName(m.Topic); err != nil {
			return fmt.Errorf("publish message %d: %w", i, err)
		}
		kms[i] = kafkago.Message{Topic: m.Topic, Key: m.Key, Value: m.Value, Time: m.Time}
	}
	// kafka-go's WriteMessages queues the batch before it looks at ctx, and a queued
	// batch is sent whatever becomes of the caller: a caller that gave up (a wave that
	// lost its leadership) must not start a write.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %d messages: %w", len(msgs), err)
	}
	err := p.w.WriteMessages(ctx, kms...)
	if unknownTopic(err) {
		// The writer looked the topic up in the shared metadata cache, which may not
		// know a topic that another process created since the last refresh.
		err = p.retryUnknown(ctx, kms, err)
	}
	return p.mapError(ctx, msgs, err)
}

// retryUnknown asks the cluster whether the topics of kms exist; if they all do,
// it waits for the cache to learn them and writes again.
func (p *publisher) retryUnknown(ctx context.Context, kms []kafkago.Message, err error) error {
	seen := map[string]bool{}
	for _, m := range kms {
		if seen[m.Topic] {
			continue
		}
		seen[m.Topic] = true
		ok, cerr := p.b.topicExists(ctx, m.Topic)
		if cerr != nil || !ok {
			return err
		}
		if werr := p.b.waitForLeaders(ctx, m.Topic); werr != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return err
	}
	return p.w.WriteMessages(ctx, kms...)
}

// mapError turns kafka-go's errors into the bus's sentinel errors, naming the topic.
func (p *publisher) mapError(ctx context.Context, msgs []bus.Message, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, io.ErrClosedPipe) {
		return bus.ErrClosed
	}
	if ctx.Err() != nil {
		return fmt.Errorf("publish %d messages: %w", len(msgs), err)
	}
	var tooLarge kafkago.MessageTooLargeError
	if errors.As(err, &tooLarge) {
		return fmt.Errorf("publish to %s: a message of %d bytes exceeds the writer's batch bytes %d: %w",
			tooLarge.Message.Topic, len(tooLarge.Message.Key)+len(tooLarge.Message.Value), p.b.opts.BatchBytes, bus.ErrMessageTooLarge)
	}
	var werrs kafkago.WriteErrors
	if errors.As(err, &werrs) {
		for i, e := range werrs {
			if e != nil && errors.Is(e, kafkago.MessageSizeTooLarge) {
				var refused []bus.Message
				for j, e := range werrs {
					if e != nil && msgs[j].Topic == msgs[i].Topic {
						refused = append(refused, msgs[j])
					}
				}
				return p.refusedAsTooLarge(ctx, msgs[i].Topic, msgs[i].Topic, refused, e)
			}
			if e != nil {
				return fmt.Errorf("publish: %d of %d messages failed, first message %d to %s: %w",
					werrs.Count(), len(msgs), i, msgs[i].Topic, p.b.explain(ctx, classify(e)))
			}
		}
	}
	topic := msgs[0].Topic
	if errors.Is(err, kafkago.MessageSizeTooLarge) {
		return p.refusedAsTooLarge(ctx, topic, topic, msgs, err)
	}
	return fmt.Errorf("publish %d messages to %s: %w", len(msgs), topic, p.b.explain(ctx, classify(err)))
}

// refusedAsTooLarge is the error of msgs the broker refused as too large: the record
// batch was over the topic's max.message.bytes, which is then below the writer's batch
// bytes (a wave's max_message_bytes). It names the largest message and the topic's limit.
func (p *publisher) refusedAsTooLarge(ctx context.Context, topic, dest string, msgs []bus.Message, err error) error {
	largest := 0
	for _, m := range msgs {
		largest = max(largest, len(m.Key)+len(m.Value))
	}
	limit := "unknown"
	if n, lerr := p.b.TopicMaxMessageBytes(ctx, topic); lerr == nil {
		limit = strconv.Itoa(n)
	}
	return fmt.Errorf("publish %d messages to %s: the broker refused them as too large: the largest is %d bytes, and topic %s's max.message.bytes is %s, "+
		"below the producer's limit %d (raise it on the topic): %w", len(msgs), dest, largest, topic, limit, p.b.opts.BatchBytes, classify(err))
}

// unknownTopic reports whether err says a topic is unknown: the broker's answer, or
// kafka-go's lookup in its metadata cache (a topic deleted since, or created by another
// process and not learnt yet: the caller asks the cluster to tell them apart).
func unknownTopic(err error) bool {
	return errors.Is(err, kafkago.UnknownTopicOrPartition) || errors.Is(err, protocol.ErrNoTopic) || errors.Is(err, protocol.ErrNoPartition)
}

// confirmUnknown is err, which says topic is unknown (unknownTopic), classified as
// bus.ErrUnknownTopic when the cluster, asked directly, does not list the topic (it was
// deleted: a producer may create it again), or when it cannot be asked. A topic it lists
// is only missing from this client's metadata cache, which is refreshed: err is then
// returned as the plain error of one attempt, for the caller to retry.
func (b *Bus) confirmUnknown(ctx context.Context, topic string, err error) error {
	ok, cerr := b.topicExists(ctx, topic)
	if cerr != nil || !ok {
		return fmt.Errorf("%w: %w", bus.ErrUnknownTopic, err)
	}
	if _, rerr := b.refreshTopic(ctx, topic); rerr != nil {
		b.log.Debug("refresh the metadata of a topic the cache did not know", "topic", topic, "err", rerr)
	}
	return fmt.Errorf("topic %s not in this client's metadata yet (refreshed): %w", topic, errors.New(err.Error()))
}

// classify wraps kafka-go errors that have a bus meaning with the bus sentinel.
func classify(err error) error {
	switch {
	case unknownTopic(err):
		return fmt.Errorf("%w: %w", bus.ErrUnknownTopic, err)
	case errors.Is(err, kafkago.MessageSizeTooLarge), errors.Is(err, kafkago.RecordListTooLarge):
		return fmt.Errorf("%w: %w", bus.ErrMessageTooLarge, err)
	default:
		return err
	}
}

// Close flushes pending batches and makes later Publish calls fail with ErrClosed.
func (p *publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.b.forget(p, nil)
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("close kafka writer: %w", err)
	}
	return nil
}
