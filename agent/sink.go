package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
)

// Sink delivers batches: to the bus (Kafka in the distributed shape, the in-process bus
// in the embedded one) or over HTTP to the judge.
type Sink interface {
	// Send returns once the batch is accepted. An error wrapping ErrRejected means the
	// batch will never be accepted (the agent drops it); any other error is retried.
	Send(ctx context.Context, b metric.Batch) error
	// Close releases the sink. It is idempotent.
	Close() error
	// String names the endpoint for logs, never with a secret.
	String() string
}

// ErrRejected marks a batch the sink refuses for good (invalid, too large).
var ErrRejected = errors.New("batch rejected")

// RetryAfterError is a send the sink's endpoint refused for now, saying when to try
// again (Retry-After on a 503 or a 429): the sender waits at least that long, within a
// bound (retryWait).
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// BusSinkOptions configures NewBusSink.
type BusSinkOptions struct {
	// Topic is metric.Topic when empty.
	Topic string
	// Partitions and Replication are used when the sink creates the topic.
	Partitions, Replication int
	// Endpoint describes the bus in logs ("kafka 127.0.0.1:9092").
	Endpoint string
	// Logger says when the sink creates a deleted topic again; slog.Default() when nil.
	Logger *slog.Logger
}

// BusSink publishes each batch as one message keyed by its node, so one node's batches
// stay in order on one partition.
type BusSink struct {
	b    bus.Bus
	opts BusSinkOptions

	mu      sync.Mutex
	created bool
	pub     bus.Publisher
	closed  bool
}

var _ Sink = (*BusSink)(nil)

// NewBusSink returns a sink on b. It creates the topic on the first Send (and again after
// a failure), so an agent started before Kafka still gets there, and again when a Send
// finds it deleted (bus.ErrUnknownTopic), so that the batches buffered meanwhile are
// delivered without a restart. The caller owns b.
func NewBusSink(b bus.Bus, opts BusSinkOptions) *BusSink {
	if opts.Topic == "" {
		opts.Topic = metric.Topic
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &BusSink{b: b, opts: opts}
}

// Send implements Sink.
func (s *BusSink) Send(ctx context.Context, b metric.Batch) error {
	value, err := metric.Encode(b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	pub, err := s.publisher(ctx)
	if err != nil {
		return err
	}
	msg := bus.Message{Topic: s.opts.Topic, Key: []byte(b.Node), Value: value, Time: b.TS}
	err = pub.Publish(ctx, msg)
	if errors.Is(err, bus.ErrUnknownTopic) && ctx.Err() == nil {
		// The topic was deleted after the sink created it (the agent's bus check at the
		// start would not see it again): create it as at the start and write once more.
		// A failure is the Send's: the agent buffers the batch and the next Send tries
		// again, so the topic comes back whenever the cluster lets it.
		if rerr := bus.RecreateTopic(ctx, s.b, s.spec(), err, s.opts.Logger); rerr != nil {
			return fmt.Errorf("publish to %s: %w (and %w)", s.opts.Topic, err, rerr)
		}
		err = pub.Publish(ctx, msg)
	}
	if errors.Is(err, bus.ErrMessageTooLarge) {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if err != nil {
		return fmt.Errorf("publish to %s: %w", s.opts.Topic, err)
	}
	return nil
}

func (s *BusSink) publisher(ctx context.Context) (bus.Publisher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, bus.ErrClosed
	}
	if !s.created {
		if err := s.b.CreateTopic(ctx, s.spec()); err != nil {
			return nil, fmt.Errorf("the metric topic: %w", err) // the bus names the topic
		}
		s.created = true
	}
	if s.pub == nil {
		p, err := s.b.Publisher()
		if err != nil {
			return nil, fmt.Errorf("publisher: %w", err)
		}
		s.pub = p
	}
	return s.pub, nil
}

// spec is the topic the sink creates, at its start and after a deletion alike.
func (s *BusSink) spec() bus.TopicSpec {
	return bus.TopicSpec{Name: s.opts.Topic, Partitions: s.opts.Partitions, Replication: s.opts.Replication}
}

// Close implements Sink; it closes the publisher, not the bus.
func (s *BusSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.pub != nil {
		return s.pub.Close()
	}
	return nil
}

// String implements Sink.
func (s *BusSink) String() string {
	if s.opts.Endpoint != "" {
		return s.opts.Endpoint + " topic " + s.opts.Topic
	}
	return "bus topic " + s.opts.Topic
}

// HTTPSink POSTs each batch, as the JSON of the bus message, to the judge's /v1/metrics.
type HTTPSink struct {
	url    string
	token  config.Secret
	client *http.Client
}

var _ Sink = (*HTTPSink)(nil)

// NewHTTPSink returns a sink posting to url with an optional bearer token.
func NewHTTPSink(url string, token config.Secret, client *http.Client) *HTTPSink {
	if client == nil {
		client = http.DefaultClient
	}
	return &HTTPSink{url: url, token: token, client: client}
}

// Send implements Sink. 400, 413 and 422 reject the batch for good (retrying cannot
// help); anything else that is not 2xx is retried, including 401 and 403, since a
// fixed token on the judge should let delivery resume. A 503 or 429 with Retry-After
// (the judge's 503s carry one) is a *RetryAfterError.
func (s *HTTPSink) Send(ctx context.Context, b metric.Batch) error {
	body, err := metric.Encode(b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	a, err := httpapi.Call(ctx, s.client, httpapi.Request{Method: http.MethodPost, URL: s.url, Token: s.token, Body: body, Limit: 512})
	if err != nil {
		// url.Error carries the URL, which Validate keeps free of credentials.
		return fmt.Errorf("post: %w", err)
	}
	msg := bytes.TrimSpace(a.Body)
	switch {
	case a.OK():
		return nil
	case a.Status == http.StatusBadRequest, a.Status == http.StatusRequestEntityTooLarge,
		a.Status == http.StatusUnprocessableEntity:
		return fmt.Errorf("%w: post %s: HTTP %s: %s", ErrRejected, redactURL(s.url), a.StatusText, msg)
	default:
		err := fmt.Errorf("post %s: HTTP %s: %s", redactURL(s.url), a.StatusText, msg)
		if a.Status == http.StatusServiceUnavailable || a.Status == http.StatusTooManyRequests {
			if d, ok := httpapi.RetryAfter(a.Header, time.Now()); ok {
				return &RetryAfterError{Err: err, After: d}
			}
		}
		return err
	}
}

// Close implements Sink.
func (s *HTTPSink) Close() error {
	s.client.CloseIdleConnections()
	return nil
}

// String implements Sink.
func (s *HTTPSink) String() string { return "http " + redactURL(s.url) }
