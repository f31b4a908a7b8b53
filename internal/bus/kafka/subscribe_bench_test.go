package kafka_test

import (
	"context"
	"crypto/sha256"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
)

// BenchmarkKafkaSubscribe measures how fast one subscription handles a backlog of 1 KiB
// messages (the size of a metric batch) on 3 partitions, with the default 1 s commits:
// serially (Subscribe) and with a worker per partition (SubscribeConcurrent), with a
// handler that does nothing and with one that hashes the message (a few µs of CPU, as a
// decoder would spend). Each iteration reads the whole backlog as a new group; msgs/s
// counts from the first message handled to the last, leaving the group's join out.
func BenchmarkKafkaSubscribe(b *testing.B) {
	if os.Getenv(testenv.Kafka.Env) == "" {
		b.Skipf("%s not set", testenv.Kafka.Env)
	}
	ctx := context.Background()
	tt := newTestTopic(b, ctx, "subbench", 3, kafka.Options{BatchSize: 1000})
	const perPartition = 20000
	tt.publishSeq(b, ctx, perPartition, 1<<10)
	const backlog = 3 * perPartition

	var groups atomic.Int64
	handlers := map[string]func(m bus.Message){
		"noop":   func(bus.Message) {},
		"sha256": func(m bus.Message) { sha256.Sum256(m.Value) },
	}
	for _, hname := range []string{"noop", "sha256"} {
		for _, concurrent := range []bool{false, true} {
			mode := "serial"
			if concurrent {
				mode = "per-partition"
			}
			b.Run("handler="+hname+"/mode="+mode, func(b *testing.B) {
				work := handlers[hname]
				var busy time.Duration
				commits := tt.bus.CommitRequests()
				for b.Loop() {
					s := tt.subscriber(b, tt.bus, tt.name+".g"+strconv.FormatInt(groups.Add(1), 10))
					var (
						n           atomic.Int64
						first, last time.Time
					)
					sctx, stop := context.WithCancel(ctx)
					h := func(_ context.Context, m bus.Message) error {
						work(m)
						switch n.Add(1) {
						case 1:
							first = time.Now()
						case backlog:
							last = time.Now()
							stop()
						}
						return nil
					}
					subscribe := s.Subscribe
					if concurrent {
						subscribe = s.SubscribeConcurrent
					}
					if err := subscribe(sctx, h); err != nil {
						b.Fatal(err)
					}
					s.Close()
					busy += last.Sub(first)
				}
				b.ReportMetric(float64(b.N*backlog)/busy.Seconds(), "msgs/s")
				b.ReportMetric(float64(tt.bus.CommitRequests()-commits)/float64(b.N), "commits/op")
			})
		}
	}
}
