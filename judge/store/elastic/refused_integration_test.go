package elastic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv/estest"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
)

// busyItem stands between the store's client and the real engine. The first bulk
// request that carries a document of node busyNode loses that document on the way (the
// engine never sees it) and its answer gains, in the document's place, the 429 with
// which a node whose write queue is full refuses one item of a bulk. The real engine
// cannot be made to do that on demand; everything else is its own doing.
type busyItem struct {
	base  http.RoundTripper
	taken atomic.Bool // the document was taken out of a request and answered 429
}

const busyNode = "busy"

func (b *busyItem) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/_bulk") || b.taken.Load() || r.Body == nil {
		return b.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	// Two lines per document: the action, then the source.
	lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	pos := -1
	for i := 1; i < len(lines); i += 2 {
		if bytes.Contains(lines[i], []byte(`"node":"`+busyNode+`"`)) {
			pos = i / 2
			lines = append(lines[:i-1], lines[i+1:]...)
			break
		}
	}
	if pos >= 0 {
		body = append(bytes.Join(lines, []byte("\n")), '\n')
	}
	r2 := r.Clone(r.Context())
	r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	res, err := b.base.RoundTrip(r2)
	if err != nil || pos < 0 || res.StatusCode != http.StatusOK {
		return res, err
	}
	answer, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	var parsed struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(answer, &parsed); err != nil || len(parsed.Items) != len(lines)/2 {
		return nil, fmt.Errorf("busyItem: bulk answer %.300s: %v (want %d items)", answer, err, len(lines)/2)
	}
	refusal := json.RawMessage(`{"create":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"rejected execution (test: queue full)"}}}`)
	items := append(parsed.Items[:pos:pos], append([]json.RawMessage{refusal}, parsed.Items[pos:]...)...)
	answer, err = json.Marshal(map[string]any{"errors": true, "items": items})
	if err != nil {
		return nil, err
	}
	res.Body, res.ContentLength = io.NopCloser(bytes.NewReader(answer)), int64(len(answer))
	res.Header.Del("Content-Length")
	b.taken.Store(true)
	return res, nil
}

// TestElasticMixedBulkRefusalsIntegration: one bulk answer refuses one document for good
// (a real mapping conflict: "wave" beside an existing "wave.tps") and one for now (429),
// and stores the rest. Through the judge's buffer, as its bus ingest writes: the 429'd
// document is retried and stored, the conflicting one counted as refused, and the
// batch acknowledged (its Kafka offset may be committed) once the engine holds every
// point it can hold.
func TestElasticMixedBulkRefusalsIntegration(t *testing.T) {
	cfg := estest.Config(t)
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	busy := &busyItem{base: cfg.Transport}
	cfg.Transport = busy
	s, err := elastic.New(elastic.Options{Config: cfg, Prefix: prefix, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts := time.Date(2018, 3, 3, 3, 0, 0, 0, time.UTC)
	if err := s.Write(ctx, []store.Point{{Node: "w1", Name: "wave.tps", TS: ts, Value: 1}}); err != nil {
		t.Fatalf("write wave.tps: %v", err)
	}

	buf := store.NewBuffered(s, store.BufferOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	defer buf.Close()
	at := ts.Add(time.Second)
	batch := []store.Point{
		{Node: "w1", Name: "wave", TS: at, Value: 2}, // a mapping conflict: refused for good
		{Node: busyNode, Name: "cpu.util", TS: at, Value: 3},
		{Node: "w2", Name: "cpu.util", TS: at, Value: 4},
		{Node: "w2", Name: "load.1", TS: at, Value: 5},
	}
	acked := make(chan struct{})
	if err := buf.WriteAcked(ctx, batch, func() { close(acked) }); err != nil {
		t.Fatalf("WriteAcked: %v", err)
	}
	select {
	case <-acked:
	case <-ctx.Done():
		t.Fatalf("the batch was never acknowledged: %+v", buf.Counters())
	}
	if !busy.taken.Load() {
		t.Fatal("no bulk request carried the busy document: the test did not exercise a 429")
	}
	if c := buf.Counters(); c.Written != 3 || c.Refused != 1 || c.Dropped != 1 || c.Errors != 0 {
		t.Errorf("counters %+v, want 3 written, 1 refused (the conflict) and dropped, no failed write", c)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	for _, q := range []store.Query{{Node: busyNode, Name: "cpu.util"}, {Node: "w2", Name: "cpu.util"}, {Node: "w2", Name: "load.1"}} {
		q.From, q.To = ts, ts.Add(time.Hour)
		if got, err := s.Stats(ctx, q); err != nil || got.Count != 1 {
			t.Errorf("%s %s: %+v, %v; want the point stored", q.Node, q.Name, got, err)
		}
	}
	if got, err := s.Stats(ctx, store.Query{Node: "w1", Name: "wave", From: ts, To: ts.Add(time.Hour)}); err == nil && got.Count != 0 {
		t.Errorf("w1 wave: %+v, want nothing stored", got)
	}
}

// TestElasticMetricNamePrefixIntegration: metric names are field paths, so "wave" cannot
// be stored beside "wave.tps"; Write stores the other documents, and the other metrics of
// the document holding "wave" (written again without it), and reports the refused point
// as a *store.RefusedError (invalid input) that names the field.
func TestElasticMetricNamePrefixIntegration(t *testing.T) {
	prefix := testPrefix(t)
	estest.CleanupPrefix(t, prefix)
	s := newStore(t, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts := time.Date(2018, 3, 3, 3, 0, 0, 0, time.UTC)
	if err := s.Write(ctx, []store.Point{{Node: "w1", Name: "wave.tps", TS: ts, Value: 1}}); err != nil {
		t.Fatalf("write wave.tps: %v", err)
	}
	err := s.Write(ctx, []store.Point{
		{Node: "w1", Name: "wave", TS: ts.Add(time.Second), Value: 2},
		{Node: "w1", Name: "cpu.util", TS: ts.Add(time.Second), Value: 2}, // same document: stored without wave
		{Node: "w2", Name: "cpu.util", TS: ts.Add(time.Second), Value: 3},
	})
	var refused *store.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "m.wave") {
		t.Fatalf("write wave beside wave.tps: %v, want a *store.RefusedError wrapping ErrInvalid naming m.wave", err)
	}
	if refused.Points != 1 || refused.Total != 3 {
		t.Fatalf("refused %d of %d points, want 1 of 3 (wave)", refused.Points, refused.Total)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	for _, node := range []string{"w1", "w2"} {
		got, err := s.Stats(ctx, store.Query{Node: node, Name: "cpu.util", From: ts, To: ts.Add(time.Hour)})
		if err != nil || got.Count != 1 {
			t.Errorf("%s cpu.util of the refused write: %+v, %v; want it stored", node, got, err)
		}
	}
}
