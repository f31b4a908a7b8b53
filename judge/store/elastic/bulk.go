package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// bulkIndexer is the store's one bulk indexer, shared by every Write for the store's
// life: it encodes documents into request bodies of up to FlushBytes (in reused
// buffers) and sends them with at most Workers requests in flight, so that with two
// writers the engine indexes one request while the next is encoded and sent. Each
// request asks for only its items' status and error (filter_path): a bulk answer
// otherwise repeats index, id, version and shard counts for every document.
//
// It is not esutil.BulkIndexer: that one matches answers to items by position, so it
// cannot filter the answer that way; it copies every body into its own buffer; and it
// sends requests outside the caller's context, so that a cancelled Write cannot stop
// them.
type bulkIndexer struct {
	s     *Store
	slots chan struct{} // one per request in flight
	bufs  sync.Pool     // *[]byte request bodies
}

// bulkFilter keeps what index needs of a bulk answer.
var bulkFilter = []string{"errors", "items.*.status", "items.*.error.type", "items.*.error.reason",
	"items.*.error.caused_by.type", "items.*.error.caused_by.reason"}

func newBulkIndexer(s *Store, workers int) *bulkIndexer {
	return &bulkIndexer{s: s, slots: make(chan struct{}, workers)}
}

// itemResult is what a bulk answer says of one item, as bulkFilter keeps it.
type itemResult struct {
	Status int `json:"status"`
	Error  struct {
		Type     string `json:"type"`
		Reason   string `json:"reason"`
		CausedBy struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"caused_by"`
	} `json:"error"`
}

// request is one bulk request: its documents, in body order.
type request struct {
	docs []*document
	body *[]byte
}

// maxReasons bounds the refusal reasons an outcome keeps: enough for the log to name
// the cause, not one per document.
const maxReasons = 3

// outcome is what one or more requests came to. Every document sent ends up in exactly
// one of existing, trimmed, retry or failed, or was stored.
type outcome struct {
	existing []*document // created before: to send again, now as updates
	trimmed  []*document // refused for a field: to send again at once without its metrics
	retry    []*document // refused with 429, 5xx, or 409 to an update: to retry later
	failed   []*document // refused for good (a mapping conflict, say)
	reasons  []string    // the first few reasons of failed
	err      error       // a request itself failed
}

// add merges o2 into o.
func (o *outcome) add(o2 outcome) {
	o.existing = append(o.existing, o2.existing...)
	o.trimmed = append(o.trimmed, o2.trimmed...)
	o.retry = append(o.retry, o2.retry...)
	o.failed = append(o.failed, o2.failed...)
	o.addReasons(o2.reasons...)
	if o.err == nil {
		o.err = o2.err
	}
}

// addReasons keeps the first maxReasons distinct reasons.
func (o *outcome) addReasons(reasons ...string) {
	for _, r := range reasons {
		if len(o.reasons) < maxReasons && !slices.Contains(o.reasons, r) {
			o.reasons = append(o.reasons, r)
		}
	}
}

// index sends docs and sorts them by the engine's answers: the documents whose create
// found them existing (marked to merge), those the engine refused for now and those it
// refused for good. A document refused for good does not hold up the others: they are
// all answered. If a request fails (after the client's own retries), err says so and
// its documents are in none of the lists.
func (bi *bulkIndexer) index(ctx context.Context, docs []*document) outcome {
	reqs := bi.split(docs)
	if len(reqs) == 1 {
		return bi.send(ctx, reqs[0])
	}
	outs := make([]outcome, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { outs[i] = bi.send(ctx, r) })
	}
	wg.Wait()
	var o outcome
	for _, o2 := range outs {
		o.add(o2)
	}
	return o
}

// split encodes docs into requests of at most FlushBytes (a larger document goes alone).
func (bi *bulkIndexer) split(docs []*document) []request {
	var reqs []request
	cur := request{body: bi.buffer()}
	for _, d := range docs {
		n := len(*cur.body)
		*cur.body = d.appendBulk(*cur.body)
		if len(*cur.body) > bi.s.opts.FlushBytes && len(cur.docs) > 0 {
			*cur.body = (*cur.body)[:n]
			reqs = append(reqs, cur)
			cur = request{body: bi.buffer()}
			*cur.body = d.appendBulk(*cur.body)
		}
		cur.docs = append(cur.docs, d)
	}
	return append(reqs, cur)
}

func (bi *bulkIndexer) buffer() *[]byte {
	if b, ok := bi.bufs.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

// send performs one request, once a slot is free, and sorts out its answer.
func (bi *bulkIndexer) send(ctx context.Context, r request) outcome {
	defer bi.bufs.Put(r.body)
	select {
	case bi.slots <- struct{}{}:
	case <-ctx.Done():
		return outcome{err: fmt.Errorf("elastic store: bulk: %w", ctx.Err())}
	}
	raw, err := bi.s.do(ctx, esapi.BulkRequest{Body: bytes.NewReader(*r.body), FilterPath: bulkFilter}, "bulk")
	<-bi.slots
	if err != nil {
		return outcome{err: err}
	}
	var res struct {
		Errors bool            `json:"errors"`
		Items  json.RawMessage `json:"items"` // decoded only when something went wrong
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return outcome{err: fmt.Errorf("elastic store: bulk: decode answer: %w", err)}
	}
	if !res.Errors {
		return outcome{}
	}
	// One of the two actions per item, by position.
	var items []struct {
		Create itemResult `json:"create"`
		Update itemResult `json:"update"`
	}
	if err := json.Unmarshal(res.Items, &items); err != nil {
		return outcome{err: fmt.Errorf("elastic store: bulk: decode items: %w", err)}
	}
	if len(items) != len(r.docs) {
		return outcome{err: fmt.Errorf("elastic store: bulk: %d answers for %d documents", len(items), len(r.docs))}
	}
	var o outcome
	for i, item := range items {
		d := r.docs[i]
		it := item.Create
		if d.merge {
			it = item.Update
		}
		switch {
		case it.Status >= 200 && it.Status < 300:
		case it.Status == http.StatusConflict && !d.merge:
			d.merge = true
			o.existing = append(o.existing, d)
		case it.Status == http.StatusTooManyRequests || it.Status == http.StatusConflict || it.Status >= 500:
			o.retry = append(o.retry, d)
		case d.trim(it.Status, it.Error.Type, it.Error.Reason, it.Error.CausedBy.Reason):
			o.trimmed = append(o.trimmed, d)
		default:
			o.failed = append(o.failed, d)
			if len(o.reasons) < maxReasons {
				o.addReasons(fmt.Sprintf("%d %s: %s", it.Status, it.Error.Type, it.Error.Reason))
			}
		}
	}
	return o
}
