package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/binlake/binlake/judge/store"
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
var bulkFilter = []string{"errors", "items.*.status", "items.*.error.type", "items.*.error.reason"}

func newBulkIndexer(s *Store, workers int) *bulkIndexer {
	return &bulkIndexer{s: s, slots: make(chan struct{}, workers)}
}

// itemResult is what a bulk answer says of one item, as bulkFilter keeps it.
type itemResult struct {
	Status int `json:"status"`
	Error  struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// request is one bulk request: its documents, in body order.
type request struct {
	docs []*document
	body *[]byte
}

// outcome is what one request came to.
type outcome struct {
	existing []*document // created before: to send again, now as updates
	refused  []*document // refused with 429, 5xx, or 409 to an update: to retry later
	failed   int         // refused for good
	failures []string    // the first few reasons
	err      error       // the request itself failed
}

// index sends docs. It returns the documents whose create found them existing (marked
// to merge) and those the engine refused for now. It fails if a request fails (after
// the client's own retries) or the engine refuses a document for good (a mapping
// conflict, say: an error wrapping store.ErrInvalid).
func (bi *bulkIndexer) index(ctx context.Context, docs []*document) (existing, refused []*document, err error) {
	reqs := bi.split(docs)
	outs := make([]outcome, len(reqs))
	if len(reqs) == 1 {
		outs[0] = bi.send(ctx, reqs[0])
	} else {
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() { outs[i] = bi.send(ctx, r) })
		}
		wg.Wait()
	}
	var failed int
	var failures []string
	for _, o := range outs {
		if o.err != nil {
			return nil, nil, o.err
		}
		existing = append(existing, o.existing...)
		refused = append(refused, o.refused...)
		failed += o.failed
		failures = append(failures, o.failures...)
	}
	if failed > 0 {
		return nil, nil, fmt.Errorf("elastic store: %d of %d documents rejected: %s: %w",
			failed, len(docs), strings.Join(failures[:min(len(failures), 3)], "; "), store.ErrInvalid)
	}
	return existing, refused, nil
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
			o.refused = append(o.refused, d)
		default:
			o.failed++
			if len(o.failures) < 3 {
				o.failures = append(o.failures, fmt.Sprintf("%d %s: %s", it.Status, it.Error.Type, it.Error.Reason))
			}
		}
	}
	return o
}
