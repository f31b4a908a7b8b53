package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/bustest"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// TestReadIntegration: Read delivers each partition from the position asked for to its
// end as it was, the partitions in order, joining no group; following delivers what
// comes later until the handler or the context ends it; a partition or topic that does
// not exist is named.
func TestReadIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := kafka.New(kafka.Options{Brokers: testenv.HostPorts(addr), ClientID: "binlake-read", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	topic := fmt.Sprintf("binlake-read-%d", time.Now().UnixNano())
	if err := b.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	to := pub.(bus.PartitionPublisher)
	publish := func(p int, values ...string) {
		t.Helper()
		var msgs []bus.Message
		for _, v := range values {
			msgs = append(msgs, bus.Message{Topic: topic, Key: []byte("k" + v), Value: []byte(v)})
		}
		for attempt := 1; ; attempt++ { // a new topic's leaders may not be known yet
			err := to.PublishTo(ctx, topic, p, msgs...)
			if err == nil {
				return
			}
			if attempt == 50 {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	publish(0, "a0", "a1", "a2")
	publish(2, "c0", "c1")
	time.Sleep(20 * time.Millisecond) // the next messages' times are after mark
	mark := time.Now()
	time.Sleep(20 * time.Millisecond)
	publish(0, "a3", "a4")
	publish(2, "c2")

	read := func(opts bus.ReadOptions) ([]string, error) {
		opts.Topic = topic
		var got []string
		err := b.Read(ctx, opts, func(m bus.Message) error {
			if m.Topic != topic || string(m.Key) != "k"+string(m.Value) || m.Time.IsZero() {
				t.Errorf("message %+v", m)
			}
			s, _ := showAt(m)
			got = append(got, s)
			return nil
		})
		return got, err
	}
	all := []string{"0:0 a0", "0:1 a1", "0:2 a2", "0:3 a3", "0:4 a4", "2:0 c0", "2:1 c1", "2:2 c2"}
	for _, tc := range []struct {
		name string
		opts bus.ReadOptions
		want []string
	}{
		{"start", bus.ReadOptions{From: bus.From{Kind: bus.FromOldest}}, all},
		{"end", bus.ReadOptions{From: bus.From{Kind: bus.FromNewest}}, nil},
		{"last 2", bus.ReadOptions{From: bus.From{Kind: bus.FromLast, N: 2}}, []string{"0:3 a3", "0:4 a4", "2:1 c1", "2:2 c2"}},
		{"last 9", bus.ReadOptions{From: bus.From{Kind: bus.FromLast, N: 9}}, all},
		{"offset 2 of partitions 2 and 0", bus.ReadOptions{Partitions: []int{2, 0, 2}, From: bus.From{Kind: bus.FromOffset, N: 2}},
			[]string{"0:2 a2", "0:3 a3", "0:4 a4", "2:2 c2"}},
		{"offset past the end", bus.ReadOptions{From: bus.From{Kind: bus.FromOffset, N: 99}}, nil},
		{"a time", bus.ReadOptions{From: bus.From{Kind: bus.FromTime, Time: mark}}, []string{"0:3 a3", "0:4 a4", "2:2 c2"}},
		{"a time after all", bus.ReadOptions{From: bus.From{Kind: bus.FromTime, Time: time.Now().Add(time.Hour)}}, nil},
	} {
		got, err := read(tc.opts)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	_, err = read(bus.ReadOptions{Partitions: []int{1, 7}})
	if !errors.Is(err, bus.ErrNoSuchPartition) || err.Error() != "read "+topic+": partition 7: no such partition (the topic has partitions 0, 1, 2)" {
		t.Errorf("partition 7: %v", err)
	}
	err = b.Read(ctx, bus.ReadOptions{Topic: topic + "-none"}, func(bus.Message) error { return nil })
	if !errors.Is(err, bus.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}

	// Follow partitions 1 (empty) and 2 from offset 2: c2, then what is published later,
	// until the handler says stop.
	stop := errors.New("stop")
	r := bustest.StartReading(t, func(handle func(bus.Message) error) error {
		return b.Read(ctx, bus.ReadOptions{Topic: topic, Partitions: []int{1, 2}, From: bus.From{Kind: bus.FromOffset, N: 2}, Follow: true}, handle)
	}, func(m bus.Message) (string, error) {
		s, _ := showAt(m)
		if string(m.Value) == "b1" {
			return s, stop
		}
		return s, nil
	})
	next := r.Next
	next("2:2 c2")
	publish(1, "b0")
	next("1:0 b0")
	publish(1, "b1")
	// The handler's stop ends Read as it hands b1 over: both are ready at once.
	if err := <-r.Done(); !errors.Is(err, stop) {
		t.Errorf("Read after the handler's error: %v", err)
	}
	if g := <-r.Got(); g != "1:1 b1" {
		t.Errorf("following: %q, want 1:1 b1", g)
	}

	// A following Read ends, with nil, when its context does.
	fctx, fcancel := context.WithCancel(ctx)
	r = bustest.StartReading(t, func(handle func(bus.Message) error) error {
		return b.Read(fctx, bus.ReadOptions{Topic: topic, Partitions: []int{1}, From: bus.From{Kind: bus.FromOffset, N: 2}, Follow: true}, handle)
	}, showAt)
	publish(1, "b2")
	r.Next("1:2 b2")
	fcancel()
	if err := <-r.Done(); err != nil {
		t.Errorf("Read after its context ended: %v", err)
	}
	// Ended before it could ask the cluster anything (Ctrl-C at once): nil too.
	if err := b.Read(fctx, bus.ReadOptions{Topic: topic}, func(bus.Message) error { return nil }); err != nil {
		t.Errorf("Read with its context ended: %v", err)
	}
}

// showAt renders a message as "partition:offset value".
func showAt(m bus.Message) (string, error) {
	return fmt.Sprintf("%d:%d %s", m.Partition, m.Offset, m.Value), nil
}
