//go:build !agentonly

// The wiring: building what the shared config sections (internal/config) describe, a
// bus subscription or a coordinator, is the composition's job, so that the roles
// themselves link neither the Kafka nor the ZooKeeper client: they receive interfaces.

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/internal/coord/zk"
)

// BusOptions resolves the Kafka keys of the bus section b (its TLS files, its SASL
// password) into the client's options; nil with kind none. --check and start both call
// it, so that --check refuses what start would; its errors name the key (config.Locate
// adds the file and line).
func BusOptions(b config.Bus, clientID string, logger *slog.Logger) (*kafka.Options, error) {
	if b.Kind != config.BusKafka {
		return nil, nil
	}
	kopts := &kafka.Options{ClientID: clientID, Logger: logger}
	if err := kopts.FromConfig(b.Kafka, "bus"); err != nil {
		return nil, err
	}
	return kopts, nil
}

// Subscribe is BusOptions, then SubscribeWith.
func Subscribe(ctx context.Context, b config.Bus, clientID string, logger *slog.Logger) (sub bus.Subscriber, closeFn func(), desc string, err error) {
	kopts, err := BusOptions(b, clientID, logger)
	if err != nil {
		return nil, nil, "", err
	}
	return SubscribeWith(ctx, b, kopts)
}

// SubscribeWith connects to the bus b describes with kopts (BusOptions; nil: no bus),
// creates the topic when it is missing and subscribes the group, which begins where
// Start says if it is new. With no bus it returns a nil subscriber. closeFn closes the
// subscriber, then the connection; desc names the bus for the log.
func SubscribeWith(ctx context.Context, b config.Bus, kopts *kafka.Options) (sub bus.Subscriber, closeFn func(), desc string, err error) {
	sub, _, closeFn, err = subscribeReading(ctx, b, kopts)
	if err != nil {
		return nil, nil, "", err
	}
	return sub, closeFn, BusDesc(b, kopts), nil
}

// subscribeReading is SubscribeWith, returning the connection too, which also reads
// the topic outside the group (the alarm's history); both nil with no bus.
func subscribeReading(ctx context.Context, b config.Bus, kopts *kafka.Options) (sub bus.Subscriber, r bus.Reader, closeFn func(), err error) {
	if kopts == nil {
		return nil, nil, func() {}, nil
	}
	k, err := kafka.New(*kopts)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := createTopicWhenReachable(ctx, k, bus.TopicSpec{Name: b.Topic, Partitions: b.Partitions, Replication: b.Replication}, kopts); err != nil {
		k.Close()
		return nil, nil, nil, fmt.Errorf("bus: %w", err)
	}
	start := bus.StartFirst
	if b.Start == config.StartNewest {
		start = bus.StartLast
	}
	sub, err = k.Subscriber(bus.SubscribeOptions{Topic: b.Topic, Group: b.Group, StartAt: start})
	if err != nil {
		k.Close()
		return nil, nil, nil, fmt.Errorf("bus: %w", err)
	}
	closeFn = func() {
		sub.Close()
		k.Close()
	}
	return sub, k, closeFn, nil
}

// BusDesc names the bus for the start-up line: the brokers, their security, the topic
// and the group.
func BusDesc(b config.Bus, kopts *kafka.Options) string {
	if kopts == nil {
		return "none"
	}
	sec := ""
	if kopts.TLS != nil || kopts.SASL != nil {
		sec = " (" + kopts.Security() + ")"
	}
	return fmt.Sprintf("kafka %s%s topic %s group %s (a new group starts at the %s message)",
		strings.Join(b.Brokers, ","), sec, b.Topic, b.Group, b.Start)
}

// CoordinatorOptions resolves the coordinator section c: the ZooKeeper digest password
// (from its variable or file) and the root, checked as the client would check it when
// connecting. --check and start both call it; its errors name the key.
func CoordinatorOptions(c config.Coordinator, logger *slog.Logger) (CoordOptions, error) {
	o := CoordOptions{Kind: c.Kind, Path: c.Path, Servers: c.Servers, Root: c.Root,
		SessionTimeout: c.SessionTimeout.D(), Logger: logger}
	if c.Kind != config.CoordZK {
		return o, nil
	}
	var errs []error
	if err := zk.CheckRoot(c.Root); err != nil {
		errs = append(errs, config.Bad("coordinator.root", "%w", err))
	}
	if c.Auth.Enabled() {
		pw, err := c.Auth.Password()
		if err != nil {
			key := "coordinator.auth.password_file"
			if c.Auth.PasswordFile == "" {
				key = "coordinator.auth.password_env"
			}
			errs = append(errs, config.Bad(key, "%w", err))
		}
		o.Auth = &zk.DigestAuth{Username: c.Auth.Username, Password: pw}
	}
	return o, errors.Join(errs...)
}

// Open is CoordinatorOptions, then OpenCoordinator.
func Open(ctx context.Context, c config.Coordinator, logger *slog.Logger) (coord.Coordinator, string, error) {
	o, err := CoordinatorOptions(c, logger)
	if err != nil {
		return nil, "", err
	}
	return OpenCoordinator(ctx, o)
}

// CoordOptions describe a coordinator, whatever the config section's keys.
type CoordOptions struct {
	// Kind is config.CoordSingle or else ZooKeeper.
	Kind string
	// Path is the single coordinator's file (its folder is created).
	Path string
	// Servers, Root and SessionTimeout are ZooKeeper's.
	Servers        []string
	Root           string
	SessionTimeout time.Duration
	// Auth, when set, is ZooKeeper's digest identity; the nodes created admit it only.
	Auth   *zk.DigestAuth
	Logger *slog.Logger
}

// OpenCoordinator opens the single-node coordinator or connects to ZooKeeper; desc names
// it for the log.
func OpenCoordinator(ctx context.Context, o CoordOptions) (c coord.Coordinator, desc string, err error) {
	if o.Kind == config.CoordSingle {
		c, err = single.New(single.Options{Path: o.Path})
		return c, CoordDesc(o), err
	}
	c, err = zk.New(ctx, zk.Options{Servers: o.Servers, Root: o.Root, SessionTimeout: o.SessionTimeout, Logger: o.Logger, Auth: o.Auth})
	return c, CoordDesc(o), err
}

// createTopicWhenReachable creates the topic, waiting for the brokers while none can be
// dialled: the judge and the alarm exited when Kafka was down at their start, and after
// systemd's five restarts in two minutes stayed down for good, where the agent and the
// wave wait. Any other failure (TLS, SASL, authorisation, a bad topic spec) is returned
// at once: waiting would not mend it.
func createTopicWhenReachable(ctx context.Context, k *kafka.Bus, spec bus.TopicSpec, kopts *kafka.Options) error {
	bo := backoff.New(time.Second, 30*time.Second)
	for attempt := 1; ; attempt++ {
		err := k.CreateTopic(ctx, spec)
		var op *net.OpError
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil: // stopped while it waited: a stop, not a failure
			return fmt.Errorf("%w (waiting for a Kafka broker: %v)", ctx.Err(), err)
		case !errors.As(err, &op) || op.Op != "dial":
			return err
		}
		wait := bo.NextBackOff()
		kopts.Logger.Warn("bus: no Kafka broker reachable yet; waiting for one", "brokers", strings.Join(kopts.Brokers, ","),
			"attempt", attempt, "retry_in", wait.Round(time.Millisecond).String(), "err", err)
		backoff.Sleep(ctx, wait)
	}
}

// CoordDesc names the coordinator for the start-up line: the single file, or the
// ZooKeeper servers with the root and the digest user.
func CoordDesc(o CoordOptions) string {
	if o.Kind == config.CoordSingle {
		return "single " + absPath(o.Path)
	}
	root := o.Root
	if root == "" {
		root = zk.DefaultRoot
	}
	desc := "zk " + strings.Join(o.Servers, ",") + " root " + root
	if o.Auth != nil {
		desc += " (digest auth as " + o.Auth.Username + ")"
	}
	return desc
}

// warnOpenAPI warns when the http section names a token variable of its own that this
// process does not have, and no token came from elsewhere: the operator asked for a
// token, and the API's writes would be open without a word (the start line says only
// auth=false). The role's default variable unset is the usual open API, said there.
// -check says it too, as it runs every check start runs.
func warnOpenAPI(logger *slog.Logger, h config.HTTP, defaultEnv string, token config.Secret) {
	if token == "" && h.TokenEnv != "" && h.TokenEnv != defaultEnv {
		// The name in the message: an attribute named for a token is masked in the log,
		// and a variable's name is no secret.
		logger.Warn("http.token_env names " + h.TokenEnv + ", which this process does not have: the API's writes are open to anyone who reaches it")
	}
}
