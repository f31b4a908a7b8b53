// Package wiring holds the config sections several roles share (bus, coordinator, HTTP
// API) and builds what they describe: a bus subscription, a coordinator. The roles keep
// their own defaults; the keys, checks and construction are here once.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/metric"
)

// Kinds of the bus and coordinator sections, and where a new consumer group starts.
const (
	BusKafka    = "kafka"
	BusNone     = "none"
	StartOldest = "oldest" // the oldest message the topic retains
	StartNewest = "newest" // messages published after the group joined
	CoordSingle = "single"
	CoordZK     = "zk"
)

// LogConfig is the log: section.
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// HTTPConfig is the core of the http: section of a role that serves an API.
type HTTPConfig struct {
	Listen string `yaml:"listen"`
	// Token, when set, is required as a bearer token on writes; TokenFile holds it instead.
	Token     config.Secret `yaml:"token"`
	TokenFile string        `yaml:"token_file"`
}

// Validate fills Listen with defaultListen when empty and checks the section.
func (h *HTTPConfig) Validate(defaultListen string) error {
	if h.Listen == "" {
		h.Listen = defaultListen
	}
	if _, _, err := net.SplitHostPort(h.Listen); err != nil {
		return fmt.Errorf("http.listen %q: want host:port", h.Listen)
	}
	if h.Token != "" && h.TokenFile != "" {
		return errors.New("http: set token or token_file, not both")
	}
	return nil
}

// BusConfig is the bus: section of a role that consumes the metric stream.
type BusConfig struct {
	Kind       string   `yaml:"kind"`
	Brokers    []string `yaml:"brokers"`
	Topic      string   `yaml:"topic"`
	Partitions int      `yaml:"partitions"`
	// Group is the consumer group; each role chooses its default (shared by its
	// processes, or one per process).
	Group string `yaml:"group"`
	// Start is where the group begins when it has no committed position yet:
	// StartOldest or StartNewest; each role chooses its default.
	Start string `yaml:"start"`
}

// Validate fills the defaults (kafka, the metric topic, defaultGroup, defaultStart) and
// checks the section.
func (b *BusConfig) Validate(defaultGroup, defaultStart string) error {
	switch b.Kind {
	case "":
		b.Kind = BusKafka
		fallthrough
	case BusKafka:
		if len(b.Brokers) == 0 {
			return errors.New("bus.brokers: at least one host:port for kafka (or bus.kind: none to run without the bus)")
		}
	case BusNone:
	default:
		return fmt.Errorf("bus.kind %q: want kafka or none", b.Kind)
	}
	if b.Topic == "" {
		b.Topic = metric.Topic
	}
	if b.Partitions < 0 {
		return fmt.Errorf("bus.partitions %d is negative", b.Partitions)
	}
	if b.Partitions == 0 {
		b.Partitions = metric.TopicPartitions
	}
	if b.Group == "" {
		b.Group = defaultGroup
	}
	if b.Start == "" {
		b.Start = defaultStart
	}
	if b.Start != StartOldest && b.Start != StartNewest {
		return fmt.Errorf("bus.start %q: want %s or %s", b.Start, StartOldest, StartNewest)
	}
	return nil
}

// Subscribe connects to the bus, creates the topic when it is missing and subscribes
// the group, which begins where Start says if it is new. With kind none it returns a nil subscriber.
// closeFn closes the subscriber, then the connection; desc names the bus for the log.
func (b BusConfig) Subscribe(ctx context.Context, clientID string, logger *slog.Logger) (sub bus.Subscriber, closeFn func(), desc string, err error) {
	if b.Kind != BusKafka {
		return nil, func() {}, "none", nil
	}
	k, err := kafka.New(kafka.Options{Brokers: b.Brokers, ClientID: clientID, Logger: logger})
	if err != nil {
		return nil, nil, "", err
	}
	if err := k.CreateTopic(ctx, bus.TopicSpec{Name: b.Topic, Partitions: b.Partitions}); err != nil {
		k.Close()
		return nil, nil, "", fmt.Errorf("bus: %w", err)
	}
	start := bus.StartFirst
	if b.Start == StartNewest {
		start = bus.StartLast
	}
	sub, err = k.Subscriber(bus.SubscribeOptions{Topic: b.Topic, Group: b.Group, StartAt: start})
	if err != nil {
		k.Close()
		return nil, nil, "", fmt.Errorf("bus: %w", err)
	}
	closeFn = func() {
		sub.Close()
		k.Close()
	}
	return sub, closeFn, fmt.Sprintf("kafka %s topic %s group %s (a new group starts at the %s message)",
		strings.Join(b.Brokers, ","), b.Topic, b.Group, b.Start), nil
}

// CoordConfig is the coordinator: section (kind: single or zk).
type CoordConfig struct {
	Kind           string          `yaml:"kind"`
	Path           string          `yaml:"path"`
	Servers        []string        `yaml:"servers"`
	Root           string          `yaml:"root"`
	SessionTimeout config.Duration `yaml:"session_timeout"`
}

// Validate fills the defaults (single, at defaultPath) and checks the section.
func (c *CoordConfig) Validate(defaultPath string) error {
	switch c.Kind {
	case "":
		c.Kind = CoordSingle
		fallthrough
	case CoordSingle:
		if c.Path == "" {
			c.Path = defaultPath
		}
	case CoordZK:
		if len(c.Servers) == 0 {
			return errors.New("coordinator.servers: at least one ZooKeeper host:port")
		}
	default:
		return fmt.Errorf("coordinator.kind %q: want single or zk", c.Kind)
	}
	return nil
}

// Open opens the coordinator the section describes.
func (c CoordConfig) Open(ctx context.Context, logger *slog.Logger) (coord.Coordinator, string, error) {
	return OpenCoordinator(ctx, CoordOptions{Kind: c.Kind, Path: c.Path, Servers: c.Servers, Root: c.Root,
		SessionTimeout: c.SessionTimeout.D(), Logger: logger})
}

// CoordOptions describe a coordinator, whatever the config section's keys.
type CoordOptions struct {
	// Kind is CoordSingle or else ZooKeeper.
	Kind string
	// Path is the single coordinator's file (its folder is created).
	Path string
	// Servers, Root and SessionTimeout are ZooKeeper's.
	Servers        []string
	Root           string
	SessionTimeout time.Duration
	Logger         *slog.Logger
}

// OpenCoordinator opens the single-node coordinator or connects to ZooKeeper; desc names
// it for the log.
func OpenCoordinator(ctx context.Context, o CoordOptions) (c coord.Coordinator, desc string, err error) {
	if o.Kind == CoordSingle {
		c, err = single.New(single.Options{Path: o.Path})
		return c, "single " + o.Path, err
	}
	c, err = zk.New(ctx, zk.Options{Servers: o.Servers, Root: o.Root, SessionTimeout: o.SessionTimeout, Logger: o.Logger})
	return c, "zk " + strings.Join(o.Servers, ","), err
}
