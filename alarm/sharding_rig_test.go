package alarm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/metric"
)

// The rig of the sharding tests (alarm processes sharing one consumer group on the real
// Kafka): agents publishing, a receiver counting pages per node, the checks.

// shardPolicies: cpu above 90 pages (once per 4 h), a node silent for 3 of its intervals
// pages nodata.
const shardPolicies = basePolicy + "    repeat_interval: 4h\n" + nodataPolicy

// shardNames names a sharding test's own metric topic, consumer group and ZooKeeper
// root, so that runs on the shared services never see each other.
func shardNames(kind string) (topic, group, root string) {
	suffix := time.Now().UnixNano()
	topic = fmt.Sprintf("%s.%s-%d", metric.Topic, kind, suffix)
	return topic, topic + "-alarm", fmt.Sprintf("/binlake-test-%s-%d", kind, suffix)
}

// shardNodes names n nodes and picks the violating ones: the first node on each of the
// partitions, then the next ones, up to violating. Every partition carries a violation,
// so whichever partitions a rebalance moves, violating nodes move with them.
func shardNodes(n, partitions, violating int) (nodes, bad []string) {
	seen := map[int]bool{}
	picked := map[string]bool{}
	for i := range n {
		node := fmt.Sprintf("wave-%02d", i)
		nodes = append(nodes, node)
		p := partitionOf(node, partitions)
		if !seen[p] && len(picked) < violating {
			seen[p] = true
			picked[node] = true
		}
	}
	for _, node := range nodes {
		if len(picked) < violating {
			picked[node] = true
		}
		if picked[node] {
			bad = append(bad, node)
		}
	}
	return nodes, bad
}

// partitionOf is the partition of the topic (of partitions partitions) a node's batches
// go to: the bus's publisher partitions by key (the node) with Kafka's Murmur2.
func partitionOf(node string, partitions int) int {
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	return (&kafkago.Murmur2Balancer{}).Balance(kafkago.Message{Key: []byte(node)}, ps...)
}

// fleet plays the agents: every node publishes one batch a second, as agents do, cpu 95
// while it violates and 10 otherwise, until it goes silent. Each node is controlled on
// its own (violate, heal, silence), and the fleet records when what it published
// changed, so a test can hold the alarm's notifications against what the nodes did.
type fleet struct {
	mu     sync.Mutex
	nodes  []string
	state  map[string]*agentState
	cancel context.CancelFunc
	done   chan struct{}
	// stall is the longest the topic went without a newer batch of the fleet's: from a
	// tick's timestamp until the next tick's publish returned. A loaded machine can stall
	// the publishing goroutine beyond the policies' nodata (3 intervals): the nodes are
	// then silent on the topic, and nodata pages for them are right.
	stall time.Duration
}

// agentState is one node's behaviour and its record, in the fleet's own times (the
// batches' timestamps).
type agentState struct {
	violating, silent bool
	// violatedAt is when the node published its first violating point, healedAt its
	// first healthy one after that (one violation per node: a second one is not
	// recorded); last is its latest batch.
	violatedAt, healedAt, last time.Time
}

func startFleet(t *testing.T, ctx context.Context, pub bus.Publisher, topic string, nodes, violating []string) *fleet {
	ctx, cancel := context.WithCancel(ctx)
	f := &fleet{nodes: nodes, state: map[string]*agentState{}, cancel: cancel, done: make(chan struct{})}
	for _, n := range nodes {
		f.state[n] = &agentState{}
	}
	f.violate(violating...)
	go func() {
		defer close(f.done)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		var prev time.Time
		for {
			now := time.Now().UTC()
			if err := pub.Publish(ctx, f.batches(topic, now)...); err != nil && ctx.Err() == nil {
				t.Errorf("publish: %v", err)
			}
			if !prev.IsZero() {
				f.mu.Lock()
				f.stall = max(f.stall, time.Since(prev))
				f.mu.Unlock()
			}
			prev = now
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	t.Cleanup(f.stop)
	return f
}

// batches is one tick's batches of the nodes not silent, at now, and records it.
func (f *fleet) batches(topic string, now time.Time) []bus.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	msgs := make([]bus.Message, 0, len(f.nodes))
	for _, n := range f.nodes {
		st := f.state[n]
		if st.silent {
			continue
		}
		val := 10.0
		switch {
		case st.violating:
			val = 95
			if st.violatedAt.IsZero() {
				st.violatedAt = now
			}
		case !st.violatedAt.IsZero() && st.healedAt.IsZero():
			st.healedAt = now
		}
		st.last = now
		data, err := metric.Encode(metric.Batch{Node: n, TS: now, IntervalS: 1, Points: []metric.Point{cpu(val)}})
		if err != nil {
			panic(err)
		}
		msgs = append(msgs, bus.Message{Topic: topic, Key: []byte(n), Value: data})
	}
	return msgs
}

// violate makes nodes report cpu 95 from the next tick on.
func (f *fleet) violate(nodes ...string) { f.set(nodes, func(st *agentState) { st.violating = true }) }

// heal ends the violations of nodes, of every node when none is given.
func (f *fleet) heal(nodes ...string) {
	if len(nodes) == 0 {
		nodes = f.nodes
	}
	f.set(nodes, func(st *agentState) { st.violating = false })
}

// silence stops nodes publishing: their agents died.
func (f *fleet) silence(nodes ...string) { f.set(nodes, func(st *agentState) { st.silent = true }) }

func (f *fleet) set(nodes []string, change func(*agentState)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range nodes {
		st := f.state[n]
		if st == nil {
			panic(fmt.Sprintf("fleet: no node %q", n))
		}
		change(st)
	}
}

// record is what the fleet did with node so far.
func (f *fleet) record(node string) agentState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.state[node]
}

// stop ends the publishing and waits for it.
func (f *fleet) stop() {
	f.cancel()
	<-f.done
}

// pages is what the receiver got: firing and resolved notices per node, nodata pages
// (and, to tell where a failing run went wrong, each nodata notice's node, status and
// when it arrived after the receiver's first payload).
type pages struct {
	firing, resolved map[string]int
	nodata           int
	nodataSeen       []string
}

func (r *receiver) pages() pages {
	pg := pages{firing: map[string]int{}, resolved: map[string]int{}}
	as := r.arrivals()
	for _, ar := range as {
		a := ar.a
		switch {
		case a.Labels["reason"] == "nodata":
			pg.nodata++
			pg.nodataSeen = append(pg.nodataSeen, fmt.Sprintf("%s %s at +%s", a.Labels["node"], a.Status, ar.at.Sub(as[0].at).Round(10*time.Millisecond)))
		case a.Status == "firing":
			pg.firing[a.Labels["node"]]++
		default:
			pg.resolved[a.Labels["node"]]++
		}
	}
	return pg
}

// waitPages waits until ok accepts what the receiver got, failing after 90 s.
func (r *receiver) waitPages(t *testing.T, what string, ok func(pages) bool) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for !ok(r.pages()) {
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("%s: %+v", what, r.pages())
		}
	}
}

// watch lets d pass: a window of agent ticks during which a wrong page (a duplicate, a
// false nodata) would arrive. It is the observation, not a synchronisation: the checks
// after it look at everything the receiver got.
func watch(d time.Duration) {
	<-time.After(d)
}

// longestStall is the fleet's stall so far.
func (f *fleet) longestStall() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stall
}

// nodataAfter is how long a node's silence takes to page nodata under shardPolicies
// (nodata: 3, at the fleet's one batch a second).
const nodataAfter = 3 * time.Second

// requirePagedOnce checks the outcome of a sharding test: every violating node paged
// once and was resolved once, no other node paged, no nodata page unless one of the
// fleets, the agents, truly went silent on the topic for nodataAfter (their publishing
// stalled).
func requirePagedOnce(t *testing.T, pg pages, violating []string, fleets ...*fleet) {
	t.Helper()
	var stall time.Duration
	for _, f := range fleets {
		stall = max(stall, f.longestStall())
	}
	t.Logf("pages per node: firing %v resolved %v nodata %d (the agents' longest silence on the topic %s)",
		pg.firing, pg.resolved, pg.nodata, stall.Round(10*time.Millisecond))
	for _, n := range violating {
		if pg.firing[n] != 1 || pg.resolved[n] != 1 {
			t.Errorf("%s: %d firing pages and %d resolved notices, want 1 and 1", n, pg.firing[n], pg.resolved[n])
		}
	}
	if len(pg.firing) != len(violating) || len(pg.resolved) != len(violating) {
		t.Errorf("pages for %d and resolutions for %d nodes, want only the %d violating ones", len(pg.firing), len(pg.resolved), len(violating))
	}
	switch {
	case pg.nodata != 0 && stall >= nodataAfter:
		t.Logf("%d nodata notices, after the agents' publishing stalled for %s (nodata after %s): %s",
			pg.nodata, stall.Round(10*time.Millisecond), nodataAfter, strings.Join(pg.nodataSeen, ", "))
	case pg.nodata != 0:
		t.Errorf("%d nodata pages, want none (the agents' longest silence on the topic %s): %s",
			pg.nodata, stall.Round(10*time.Millisecond), strings.Join(pg.nodataSeen, ", "))
	}
}
