package alarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// DefaultBookPrefix is where the node book keeps its pages.
const DefaultBookPrefix = "alarm/nodes"

// bookRetention is how long a node stays in the book after its last point: a node
// gone for a week no longer pages nodata after its partition moves.
const bookRetention = 7 * 24 * time.Hour

// nodeBook is the memory of nodata across processes. An alarm process only learns that
// a node exists from the node's batches, and a process that takes a partition over
// reads from the last committed position: a node that fell silent before that never
// shows up there, so without the book no process would ever page its nodata (issue 34,
// item 3). The book keeps, per partition of the metric topic, the nodes watched for
// nodata there and the own time of each one's last point per nodata policy, in the
// coordinator (DefaultBookPrefix/<partition>). The owner of a partition writes its page
// every few seconds, when the partition moves away and when it stops; a process that
// gains a partition reads its page and watches its nodes from their last points on.
// Writes merge with what the page holds (newest time wins), so an owner that has not
// seen a node yet never erases it.
type nodeBook struct {
	c      coord.Coordinator
	prefix string
	eng    *Engine
	log    *slog.Logger
	now    func() time.Time
	// mu serialises saves: the timer, a partition moving away and the stop each save,
	// from their own goroutines, and written is shared by them.
	mu sync.Mutex
	// written is what was last written per partition, to skip writes that change nothing.
	written map[int][]byte
}

// bookPage is one partition's page, as stored.
type bookPage struct {
	Nodes map[string]bookNode `json:"nodes"`
}

type bookNode struct {
	IntervalMS int64            `json:"interval_ms"`
	Seen       map[string]int64 `json:"seen"` // nodata policy → Unix ms of the node's last point for it
}

// nodeRecord is a node of the book as the engine takes it.
type nodeRecord struct {
	Interval time.Duration
	Seen     map[string]time.Time
}

func newNodeBook(c coord.Coordinator, eng *Engine, log *slog.Logger, now func() time.Time) *nodeBook {
	return &nodeBook{c: c, prefix: DefaultBookPrefix, eng: eng, log: log, now: now, written: map[int][]byte{}}
}

func (b *nodeBook) key(part int) string { return b.prefix + "/" + strconv.Itoa(part) }

// save writes the pages of the given partitions from what the engine watches; parts
// maps each node to its partition.
func (b *nodeBook) save(ctx context.Context, parts map[string]int, partitions []int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	want := make(map[int]bool, len(partitions))
	for _, p := range partitions {
		want[p] = true
	}
	recs := b.eng.nodataRecords(func(node string) bool { p, ok := parts[node]; return ok && want[p] })
	pages := map[int]map[string]nodeRecord{}
	for node, r := range recs {
		p := parts[node]
		if pages[p] == nil {
			pages[p] = map[string]nodeRecord{}
		}
		pages[p][node] = r
	}
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(pages)) {
		if err := b.merge(ctx, p, pages[p]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// merge writes one page: what it holds, updated with recs (newest time wins), without
// the nodes silent for longer than bookRetention.
func (b *nodeBook) merge(ctx context.Context, part int, recs map[string]nodeRecord) error {
	for range 3 {
		page, ver, err := b.read(ctx, part)
		if err != nil {
			return err
		}
		for node, r := range recs {
			n, ok := page.Nodes[node]
			if !ok {
				n = bookNode{Seen: map[string]int64{}}
			}
			n.IntervalMS = r.Interval.Milliseconds()
			for pol, ts := range r.Seen {
				n.Seen[pol] = max(n.Seen[pol], ts.UnixMilli())
			}
			page.Nodes[node] = n
		}
		cutoff := b.now().Add(-bookRetention).UnixMilli()
		for node, n := range page.Nodes {
			newest := int64(0)
			for _, ms := range n.Seen {
				newest = max(newest, ms)
			}
			if newest < cutoff {
				delete(page.Nodes, node)
			}
		}
		data, err := json.Marshal(page)
		if err != nil {
			return fmt.Errorf("node book: encode partition %d: %w", part, err)
		}
		if string(data) == string(b.written[part]) {
			return nil
		}
		if _, err = b.c.Put(ctx, b.key(part), data, ver); errors.Is(err, coord.ErrVersionConflict) {
			continue // another process wrote the page meanwhile: merge with what it wrote
		}
		if err != nil {
			return fmt.Errorf("node book: write partition %d: %w", part, err)
		}
		b.written[part] = data
		return nil
	}
	return fmt.Errorf("node book: partition %d kept changing under the write", part)
}

// read returns a page and its version (coord.NoVersion when there is none yet). An
// unreadable page is reported and taken as empty: the next write replaces it.
func (b *nodeBook) read(ctx context.Context, part int) (bookPage, int64, error) {
	page := bookPage{Nodes: map[string]bookNode{}}
	v, err := b.c.Get(ctx, b.key(part))
	if errors.Is(err, coord.ErrNotFound) {
		return page, coord.NoVersion, nil
	}
	if err != nil {
		return page, 0, fmt.Errorf("node book: read partition %d: %w", part, err)
	}
	if err := json.Unmarshal(v.Data, &page); err != nil || page.Nodes == nil {
		b.log.Warn("node book: a page is unreadable; starting it afresh", "partition", part, "err", err)
		page.Nodes = map[string]bookNode{}
	}
	for node, n := range page.Nodes {
		if len(n.Seen) == 0 || n.IntervalMS <= 0 {
			delete(page.Nodes, node) // not a page this code wrote: ignore the entry
		}
	}
	return page, v.Version, nil
}

// load reads the pages of the given partitions (every page when partitions is nil),
// hands their nodes to the engine, and returns each node's partition.
func (b *nodeBook) load(ctx context.Context, partitions []int) (map[string]int, error) {
	if partitions == nil {
		names, err := b.c.List(ctx, b.prefix)
		if err != nil && !errors.Is(err, coord.ErrNotFound) {
			return nil, fmt.Errorf("node book: list: %w", err)
		}
		for _, n := range names {
			if p, err := strconv.Atoi(n); err == nil {
				partitions = append(partitions, p)
			}
		}
	}
	parts := map[string]int{}
	recs := map[string]nodeRecord{}
	var errs []error
	for _, p := range partitions {
		page, _, err := b.read(ctx, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for node, n := range page.Nodes {
			r := nodeRecord{Interval: time.Duration(n.IntervalMS) * time.Millisecond, Seen: make(map[string]time.Time, len(n.Seen))}
			for pol, ms := range n.Seen {
				r.Seen[pol] = time.UnixMilli(ms).UTC()
			}
			recs[node], parts[node] = r, p
		}
	}
	b.eng.adoptNodata(recs)
	return parts, errors.Join(errs...)
}
