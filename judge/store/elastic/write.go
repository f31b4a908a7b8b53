package elastic

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/binlake/binlake/internal/jsonenc"
	wire "github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// document is the stored form of the points of one node, time and label set.
type document struct {
	index     string
	id        [16]byte // docID
	node      string
	ms        int64
	labelsKey string // wire.LabelSetKey: also the JSON of the labels object
	metrics   []metric
	// merge: the document exists (a create of it answered 409), so it goes as an
	// update that merges its fields into the stored ones.
	merge bool
	// refused are the metrics taken out because the engine refused the document for
	// them (a mapping conflict it named), trims how many times that happened.
	refused []refusedMetric
	trims   int
}

type metric struct {
	name  string
	value float64
}

// set records a metric's value; a second value for the same name replaces the first, as
// a second write of the point would.
func (d *document) set(name string, v float64) {
	for i := range d.metrics {
		if d.metrics[i].name == name {
			d.metrics[i].value = v
			return
		}
	}
	d.metrics = append(d.metrics, metric{name, v})
}

// docKey is a document's identity.
type docKey struct {
	node, labelsKey string
	ms              int64
}

// docID is a stable id of a document's identity: its time in milliseconds (6 bytes,
// big-endian) then 10 bytes of SHA-256 of node and labels; base64url in the bulk
// request. Leading with the time keeps the ids of one segment in a narrow range, so that
// the _id lookup each update makes is refused early by the segments of other times
// (Elasticsearch's advice against random ids); the hash tells apart the documents of
// one millisecond. scratch is reused for the hashed bytes.
func docID(k docKey, scratch *[]byte) [16]byte {
	b := append((*scratch)[:0], k.node...)
	b = append(b, 0)
	b = append(b, k.labelsKey...)
	*scratch = b
	sum := sha256.Sum256(b)
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], uint64(k.ms)<<16) // the low 6 bytes of ms, first
	copy(id[6:], sum[:10])
	return id
}

const msPerDay = 24 * 60 * 60 * 1000

// documents groups points into documents, in the order their first points come.
//
// The points of one document usually come one after another (a batch's node-level
// series, then each instance's), so a point of the document before looks up nothing,
// and documents and their metrics are carved out of a few allocations: the judge
// spent a third of its ingest CPU here when each document and metric list was its own.
func (s *Store) documents(points []store.Point) []*document {
	byKey := make(map[docKey]*document, len(points)/4+1)
	docs := make([]*document, 0, len(points)/3+1)
	days := map[int64]string{} // day number → index name
	var (
		lk      wire.LabelSetKeys
		slab    []document
		scratch []byte
		// arena holds the metrics of every document: the document opened last takes
		// them from its end, and once another opens, the earlier one's list is capped
		// at its length, so that a late point of it moves the list out of the arena
		// instead of writing over the next one's.
		arena     = make([]metric, len(points))
		off       int
		last, cur *document // the document opened last; the one the point before went to
	)
	for _, p := range points {
		ms := p.TS.UnixMilli()
		lkey := lk.Of(p.Labels)
		d := cur
		if d == nil || d.ms != ms || d.node != p.Node || d.labelsKey != lkey {
			k := docKey{p.Node, lkey, ms}
			if d = byKey[k]; d == nil {
				index, ok := days[ms/msPerDay]
				if !ok {
					index = s.IndexName(p.TS)
					days[ms/msPerDay] = index
				}
				if len(slab) == cap(slab) {
					slab = make([]document, 0, 64)
				}
				if last != nil {
					off += len(last.metrics)
					last.metrics = last.metrics[:len(last.metrics):len(last.metrics)]
				}
				slab = append(slab, document{index: index, id: docID(k, &scratch), node: p.Node, ms: ms, labelsKey: lkey,
					metrics: arena[off:off]})
				d = &slab[len(slab)-1]
				byKey[k] = d
				docs = append(docs, d)
				last = d
			}
			cur = d
		}
		d.set(p.Name, p.Value)
	}
	return docs
}

// appendBulk appends d's bulk action and source. A new document goes as a create, which
// costs the engine what an index does; one that exists (merge) as an update with
// doc_as_upsert, which reads the stored document and replaces only the fields given:
// the metrics of this write. retry_on_conflict covers two requests updating one
// document at once.
func (d *document) appendBulk(buf []byte) []byte {
	if d.merge {
		buf = append(buf, `{"update":{"_index":`...)
	} else {
		buf = append(buf, `{"create":{"_index":`...)
	}
	buf = jsonenc.AppendStringHTML(buf, d.index)
	buf = append(buf, `,"_id":"`...)
	buf = base64.RawURLEncoding.AppendEncode(buf, d.id[:])
	if !d.merge {
		buf = append(buf, "\"}}\n"...)
		return append(d.appendSource(buf), '\n')
	}
	buf = append(buf, "\",\"retry_on_conflict\":3}}\n{\"doc\":"...)
	buf = d.appendSource(buf)
	return append(buf, ",\"doc_as_upsert\":true}\n"...)
}

// appendSource appends d's fields as a JSON object.
func (d *document) appendSource(buf []byte) []byte {
	buf = append(buf, `{"node":`...)
	buf = jsonenc.AppendStringHTML(buf, d.node)
	buf = append(buf, `,"ts":`...)
	buf = strconv.AppendInt(buf, d.ms, 10)
	buf = append(buf, `,"hour":`...)
	buf = strconv.AppendInt(buf, d.ms/3_600_000%24, 10)
	buf = append(buf, `,"labels_key":`...)
	buf = jsonenc.AppendStringHTML(buf, d.labelsKey)
	if d.labelsKey != "" {
		buf = append(buf, `,"labels":`...)
		buf = append(buf, d.labelsKey...)
	}
	buf = append(buf, `,"m":{`...)
	for i, m := range d.metrics {
		if i > 0 {
			buf = append(buf, ',')
		}
		// Write validated every name (metric.ValidName: lowercase letters, digits, '.'
		// and '_'), so none needs escaping.
		buf = append(buf, '"')
		buf = append(buf, m.name...)
		buf = append(buf, '"', ':')
		buf = strconv.AppendFloat(buf, m.value, 'g', -1, 64)
	}
	return append(buf, "}}"...)
}

// ErrRejected reports documents the engine kept refusing with 429, 409 or 5xx after the
// retries.
var ErrRejected = errors.New("points refused by the engine")

// Write validates every point, so that a bad batch stores nothing, groups the points into
// documents and indexes them through the bulk indexer: documents that exist already are
// sent again at once as updates, documents refused with 429, 409 (to an update) or 5xx
// after a back-off, documents refused for a field the engine names (a mapping conflict)
// at once without the metrics it names. It returns once the engine has acknowledged
// every document, except those it refused for good: then, once every other document and
// metric is stored, it returns a *store.RefusedError counting the refused points and
// naming the engine's reasons, so that the caller drops just those and moves on. A document
// refused for now never goes into that count: if the retries run out, Write fails with
// ErrRejected and the caller sends the batch again.
func (s *Store) Write(ctx context.Context, points []store.Point) error {
	if err := store.ValidatePoints(points); err != nil {
		return fmt.Errorf("elastic store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	if len(points) == 0 {
		return nil
	}
	if err := s.ensureTemplate(ctx); err != nil {
		return err
	}
	docs := s.documents(points)
	all := docs
	total := len(docs)
	var failed outcome // the documents refused for good, and why
	for attempt := 0; ; {
		// Each document turns from create to update at most once, and loses metrics
		// maxTrims times at most: this ends.
		o := s.bulk.index(ctx, docs)
		if o.err != nil {
			return o.err
		}
		failed.failed = append(failed.failed, o.failed...)
		failed.addReasons(o.reasons...)
		if len(o.retry) > 0 {
			if attempt >= s.opts.MaxRetries {
				return fmt.Errorf("elastic store: %d of %d documents still refused after %d retries: %w",
					len(o.retry), total, attempt, ErrRejected)
			}
			attempt++
			s.log.Debug("bulk items refused, retrying", "documents", len(o.retry), "attempt", attempt)
			if err := sleep(ctx, s.opts.Backoff(attempt)); err != nil {
				return fmt.Errorf("elastic store: retry refused documents: %w", err)
			}
		}
		docs = append(append(o.existing, o.trimmed...), o.retry...)
		if len(docs) == 0 {
			break
		}
	}
	// The metrics taken out of documents that were then stored (or refused whole).
	var refused outcome
	n := 0
	now := time.Now()
	for _, d := range all {
		for _, m := range d.refused {
			n++
			refused.addReasons(fmt.Sprintf("metric %q: %s", m.name, m.reason))
			if ok, _ := s.refusals.Allow(m.name, now); ok {
				s.log.Warn("the engine refused a metric; the other metrics of its node and time are stored",
					"node", d.node, "metric", m.name, "labels", d.labelsKey, "reason", m.reason)
			}
		}
	}
	if n == 0 && len(failed.failed) == 0 {
		return nil
	}
	for _, d := range failed.failed {
		n += len(d.metrics)
	}
	refused.addReasons(failed.reasons...)
	return &store.RefusedError{Store: "elastic store", Points: n, Total: len(points), Reasons: refused.reasons}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
