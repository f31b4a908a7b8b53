package wave_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// heldTopics is the Kafka bus as the wave's topic creator, whose creations the test can
// hold: the instance's failing status is then seen for certain before the wave gets the
// topic back (its first recreation takes milliseconds).
type heldTopics struct {
	*kafka.Bus
	held atomic.Bool
}

func (h *heldTopics) CreateTopic(ctx context.Context, spec bus.TopicSpec) error {
	if h.held.Load() {
		return errors.New("the test holds topic creation")
	}
	return h.Bus.CreateTopic(ctx, spec)
}

// TestWaveRecreatesDeletedTopicIntegration: the row topic deleted while the wave leads
// its instance (an outside trial did it with one kafka-go DeleteTopics call) is created
// again by the wave's publisher, with the spec it created it with at the lead's start,
// and every row written before, during and after arrives: the ones before on the old
// topic, the others on the new one, each key's changes in order, none missing. While the
// topic is missing (its creation held by the test) the instance's status, the wave's own
// and the record `binlake instance list|show` read, says topic_missing with the error;
// once the rows flow again it says running with no reason. Before, the wave logged
// `partitions unknown; retrying` forever, status said running with no error, and only a
// restart of the wave brought the topic back.
func TestWaveRecreatesDeletedTopicIntegration(t *testing.T) {
	brokers := testenv.HostPorts(testenv.Require(t, testenv.Kafka))
	conn := wavetest.Connect(t)
	w := newWorkload(t, 11)
	wavetest.MustExec(t, conn, "USE "+w.db)
	wavetest.MustExec(t, conn, "CREATE TABLE t_del (id INT PRIMARY KEY, v INT NOT NULL)")
	start := wavetest.CurrentPos(t)
	topic := fmt.Sprintf("wdel%d.rows", time.Now().UnixNano()%1e9)
	a := testenv.RequireMySQL(t)
	inst := &cluster.Instance{ID: "topicdel", Start: start,
		Source:        cluster.Source{Addr: a.Addr, User: a.User, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "rows", Topic: topic, Include: []string{strings.ReplaceAll(w.db, ".", `\.`) + `\.t_del`}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := singleCoord(t)
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-d", nil); err != nil {
		t.Fatal(err)
	}
	b, err := kafka.New(kafka.Options{Brokers: brokers, MaxAttempts: 1, WriteTimeout: 5 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	topics := &heldTopics{Bus: b}
	const partitions = 3
	wv, stop := runWave(t, ctx, wave.Options{Node: "wave-d", Coord: c, Publisher: pub, Topics: topics,
		TopicSpec: bus.TopicSpec{Partitions: partitions}, MaxMessageBytes: 1 << 20, PollInterval: 100 * time.Millisecond, Logger: testLogger(t),
		Pipeline: wave.PipelineOptions{CommitInterval: 200 * time.Millisecond, PublishBackoffMax: 500 * time.Millisecond}})
	defer stop()

	const keys = 6
	v := 0
	// write sets every key's v to the next n values, one statement each.
	write := func(n int) {
		for range n {
			v++
			for id := 1; id <= keys; id++ {
				wavetest.MustExec(t, conn, fmt.Sprintf("INSERT INTO t_del VALUES (%d, %d) ON DUPLICATE KEY UPDATE v = %d", id, v, v))
			}
		}
	}
	status := func() (wave.InstanceStatus, cluster.InstanceInfo) {
		var st wave.InstanceStatus
		for _, s := range wv.Status() {
			if s.ID == inst.ID {
				st = s
			}
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		info, err := cluster.ShowInstance(sctx, c, inst.ID, 0, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		return st, *info
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // seconds at most on a quiet machine
		for !cond() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				st, info := status()
				t.Fatalf("%s: not within a minute; status %+v, instance show %+v", what, st, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	write(5) // before: values 1-5
	waitFor("the rows before the deletion on the topic", func() bool { return len(readRows(t, ctx, brokers, topic)) >= 5*keys })
	before := readRows(t, ctx, brokers, topic)

	topics.held.Store(true)
	admin := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 30 * time.Second, Transport: &kafkago.Transport{}}
	resp, err := admin.DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
	waitFor("the topic gone", func() bool { return !topicListed(ctx, brokers, topic) })

	write(5) // during: values 6-10
	waitFor("the status saying the topic is missing", func() bool {
		st, info := status()
		return st.State == cluster.StateRunning && st.Reason == wave.ReasonTopicMissing && strings.Contains(st.Error, topic) &&
			info.State == cluster.StateRunning && info.Reason == wave.ReasonTopicMissing && strings.Contains(info.Error, topic)
	})
	st, _ := status()
	t.Logf("while the topic was missing: state %s, reason %s, error %q", st.State, st.Reason, st.Error)

	topics.held.Store(false)
	write(5) // after: values 11-15
	waitFor("the rows during and after the deletion on the topic created again", func() bool {
		return len(readRows(t, ctx, brokers, topic)) >= 10*keys
	})
	waitFor("the status clear again", func() bool {
		st, info := status()
		return st.State == cluster.StateRunning && st.Reason == "" && st.Error == "" && info.Reason == "" && info.Error == ""
	})

	// A client of its own: admin's transport keeps the metadata it had of the deleted topic.
	fresh := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 30 * time.Second, Transport: &kafkago.Transport{}}
	md, err := fresh.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != partitions {
		t.Errorf("the topic created again: %+v, %v; want %d partitions as at the lead's start", md.Topics, err, partitions)
	}
	dups := checkRows(t, "before the deletion", before, 1, 5, keys)
	dups += checkRows(t, "during and after the deletion", readRows(t, ctx, brokers, topic), 6, 15, keys)
	t.Logf("every row on Kafka, in order per key (%d duplicates)", dups)
}

// row is one t_del change as the wave published it.
type row struct {
	id, v     int
	partition int
}

// readRows reads every message of topic, each partition in order, through a bus of its
// own (whose metadata no earlier reader cached); none when the topic is missing.
func readRows(t *testing.T, ctx context.Context, brokers []string, topic string) []row {
	t.Helper()
	b, err := kafka.New(kafka.Options{Brokers: brokers, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out []row
	err = b.Read(ctx, bus.ReadOptions{Topic: topic}, func(m bus.Message) error {
		var msg struct {
			Type string `json:"type"`
			Data struct {
				ID int `json:"id"`
				V  int `json:"v"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Value, &msg); err != nil {
			return fmt.Errorf("partition %d offset %d: %w", m.Partition, m.Offset, err)
		}
		if msg.Type == "insert" || msg.Type == "update" {
			out = append(out, row{id: msg.Data.ID, v: msg.Data.V, partition: m.Partition})
		}
		return nil
	})
	switch {
	case err == nil, errors.Is(err, bus.ErrUnknownTopic):
	case strings.Contains(err.Error(), "Not Leader") || strings.Contains(err.Error(), "Leader Not Available"):
		// A topic just created again elects its partitions' leaders: read again later.
		t.Logf("read %s: %v", topic, err)
		return nil
	default:
		t.Fatalf("read %s: %v", topic, err)
	}
	return out
}

// topicListed asks a fresh client whether the cluster lists topic.
func topicListed(ctx context.Context, brokers []string, topic string) bool {
	c := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafkago.Transport{}}
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	return err != nil || len(md.Topics) == 1 && md.Topics[0].Error == nil
}

// checkRows checks that rows hold every key's values from first to last, each key's in
// order and on one partition; a value again right after its run is a duplicate (a retried
// produce request), counted. It returns the duplicates.
func checkRows(t *testing.T, what string, rows []row, first, last, keys int) int {
	t.Helper()
	seen := map[int][]int{}
	part := map[int]int{}
	dups := 0
	for _, r := range rows {
		if p, ok := part[r.id]; ok && p != r.partition {
			t.Errorf("%s: key %d on partitions %d and %d", what, r.id, p, r.partition)
		}
		part[r.id] = r.partition
		s := seen[r.id]
		switch {
		case len(s) > 0 && r.v <= s[len(s)-1] && r.v >= s[0]:
			dups++ // already seen: a repeat of a run
		case len(s) > 0 && r.v != s[len(s)-1]+1:
			t.Errorf("%s: key %d: value %d after %d", what, r.id, r.v, s[len(s)-1])
			seen[r.id] = append(s, r.v)
		default:
			seen[r.id] = append(s, r.v)
		}
	}
	for id := 1; id <= keys; id++ {
		s := seen[id]
		if len(s) != last-first+1 || s[0] != first || s[len(s)-1] != last {
			t.Errorf("%s: key %d has values %v, want %d to %d in order", what, id, s, first, last)
		}
	}
	return dups
}
