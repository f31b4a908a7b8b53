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
	"github.com/binlake/binlake/judge/store"
)

// document is the stored form of the points of one node, time and label set.
type document struct {
	index, id string
	node      string
	ms        int64
	labelsKey string // store.LabelKey: also the JSON of the labels object
	metrics   []metric
	// merge: the document exists (a create of it answered 409), so it goes as an
	// update that merges its fields into the stored ones.
	merge bool
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
// big-endian) then 10 bytes of SHA-256 of node and labels, base64url. Leading with the
// time keeps the ids of one segment in a narrow range, so that the _id lookup each
// update makes is refused early by the segments of other times (Elasticsearch's advice
// against random ids); the hash tells apart the documents of one millisecond.
func docID(k docKey) string {
	h := sha256.New()
	h.Write([]byte(k.node))
	h.Write([]byte{0})
	h.Write([]byte(k.labelsKey))
	var b [16 + sha256.Size]byte
	binary.BigEndian.PutUint64(b[:8], uint64(k.ms)<<16) // the low 6 bytes of ms, first
	h.Sum(b[6:6])
	return base64.RawURLEncoding.EncodeToString(b[:16])
}

const msPerDay = 24 * 60 * 60 * 1000

// documents groups points into documents, in the order their first points come.
func (s *Store) documents(points []store.Point) []*document {
	byKey := make(map[docKey]*document, len(points)/4+1)
	var docs []*document
	days := map[int64]string{} // day number → index name
	var lk store.LabelKeys
	for _, p := range points {
		ms := p.TS.UnixMilli()
		k := docKey{p.Node, lk.Of(p.Labels), ms}
		d := byKey[k]
		if d == nil {
			index, ok := days[ms/msPerDay]
			if !ok {
				index = s.IndexName(p.TS)
				days[ms/msPerDay] = index
			}
			d = &document{index: index, id: docID(k), node: p.Node, ms: ms, labelsKey: k.labelsKey}
			byKey[k] = d
			docs = append(docs, d)
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
	buf = append(buf, d.id...)
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
		buf = jsonenc.AppendStringHTML(buf, m.name)
		buf = append(buf, ':')
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
// after a back-off. It returns once the engine has acknowledged every document.
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
	total := len(docs)
	for attempt := 0; ; {
		// Each document turns from create to update at most once: this ends.
		existing, refused, err := s.bulk.index(ctx, docs)
		if err != nil {
			return err
		}
		if len(refused) > 0 {
			if attempt >= s.opts.MaxRetries {
				return fmt.Errorf("elastic store: %d of %d documents still refused after %d retries: %w",
					len(refused), total, attempt, ErrRejected)
			}
			attempt++
			s.log.Debug("bulk items refused, retrying", "documents", len(refused), "attempt", attempt)
			if err := sleep(ctx, s.opts.Backoff(attempt)); err != nil {
				return fmt.Errorf("elastic store: retry refused documents: %w", err)
			}
		}
		docs = append(existing, refused...)
		if len(docs) == 0 {
			return nil
		}
	}
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
