package elastic

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/benchkit"
	wire "github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// source is a decoded document.
type source struct {
	Node      string             `json:"node"`
	TS        int64              `json:"ts"`
	Hour      int                `json:"hour"`
	LabelsKey string             `json:"labels_key"`
	Labels    map[string]string  `json:"labels"`
	M         map[string]float64 `json:"m"`
}

// bulkLine is one decoded action and document of a bulk body.
type bulkLine struct {
	action          string // create or update
	index, id       string
	retryOnConflict int
	doc             source
}

// decodeBulk decodes the bulk body of docs, two strict JSON lines per document: a create
// and its source, or an update and its partial document with doc_as_upsert.
func decodeBulk(t *testing.T, docs []*document) []bulkLine {
	t.Helper()
	var buf []byte
	for _, d := range docs {
		buf = d.appendBulk(buf)
	}
	lines := bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n"))
	if len(lines) != 2*len(docs) {
		t.Fatalf("%d lines for %d documents:\n%s", len(lines), len(docs), buf)
	}
	strict := func(line []byte, v any) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	out := make([]bulkLine, len(docs))
	for i := range docs {
		var action map[string]struct {
			Index           string `json:"_index"`
			ID              string `json:"_id"`
			RetryOnConflict int    `json:"retry_on_conflict"`
		}
		strict(lines[2*i], &action)
		if len(action) != 1 {
			t.Fatalf("action line %s", lines[2*i])
		}
		for name, a := range action {
			out[i] = bulkLine{action: name, index: a.Index, id: a.ID, retryOnConflict: a.RetryOnConflict}
		}
		switch out[i].action {
		case "create":
			strict(lines[2*i+1], &out[i].doc)
		case "update":
			var u struct {
				Doc         source `json:"doc"`
				DocAsUpsert bool   `json:"doc_as_upsert"`
			}
			strict(lines[2*i+1], &u)
			if !u.DocAsUpsert || out[i].retryOnConflict == 0 {
				t.Fatalf("update %s without doc_as_upsert or retry_on_conflict", lines[2*i:2*i+2])
			}
			out[i].doc = u.Doc
		default:
			t.Fatalf("action %q", out[i].action)
		}
	}
	return out
}

func testStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(Options{Prefix: "t-"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDocumentsGroupPointsByNodeTimeAndLabels(t *testing.T) {
	s := testStore(t)
	ts := time.Date(2026, 2, 3, 23, 59, 59, 999_000_000, time.UTC)
	orders := map[string]string{"instance": "orders"}
	docs := s.documents([]store.Point{
		{Node: "w1", Name: "cpu.util", TS: ts, Value: 1},
		{Node: "w1", Name: "wave.tps", Labels: orders, TS: ts, Value: 2},
		{Node: "w1", Name: "load.1", TS: ts, Value: 3},
		{Node: "w1", Name: "wave.lag_s", Labels: map[string]string{"instance": "orders"}, TS: ts, Value: 4},
		{Node: "w1", Name: "cpu.util", TS: ts, Value: 5},                              // the same point again: the later value
		{Node: "w1", Name: "cpu.util", TS: ts.Add(time.Millisecond), Value: 6},        // next day
		{Node: "w2", Name: "cpu.util", TS: ts, Value: 7},                              // another node
		{Node: "w1", Name: "cpu.util", Labels: map[string]string{}, TS: ts, Value: 8}, // empty labels are no labels
	})
	// New documents go as creates; one that exists, as an update of the same fields.
	docs[1].merge = true
	got := decodeBulk(t, docs)
	if len(got) != 4 {
		t.Fatalf("%d documents, want 4", len(got))
	}
	want := []struct {
		action, index, node, labelsKey string
		ms                             int64
		m                              map[string]float64
	}{
		{"create", "t-2026.02.03", "w1", "", ts.UnixMilli(), map[string]float64{"cpu.util": 8, "load.1": 3}},
		{"update", "t-2026.02.03", "w1", `{"instance":"orders"}`, ts.UnixMilli(), map[string]float64{"wave.tps": 2, "wave.lag_s": 4}},
		{"create", "t-2026.02.04", "w1", "", ts.UnixMilli() + 1, map[string]float64{"cpu.util": 6}},
		{"create", "t-2026.02.03", "w2", "", ts.UnixMilli(), map[string]float64{"cpu.util": 7}},
	}
	ids := map[string]bool{}
	for i, w := range want {
		g := got[i]
		doc := g.doc
		if g.action != w.action || g.index != w.index || doc.Node != w.node || doc.LabelsKey != w.labelsKey || doc.TS != w.ms {
			t.Errorf("document %d: %+v, want %s index %s node %s labels %s ts %d", i, g, w.action, w.index, w.node, w.labelsKey, w.ms)
		}
		if len(doc.M) != len(w.m) {
			t.Errorf("document %d: metrics %v, want %v", i, doc.M, w.m)
		}
		for k, v := range w.m {
			if doc.M[k] != v {
				t.Errorf("document %d: %s = %v, want %v", i, k, doc.M[k], v)
			}
		}
		if wantHour := int(w.ms / 3_600_000 % 24); doc.Hour != wantHour {
			t.Errorf("document %d: hour %d, want %d", i, doc.Hour, wantHour)
		}
		if (doc.Labels == nil) != (w.labelsKey == "") || (doc.Labels != nil && wire.LabelSetKey(doc.Labels) != w.labelsKey) {
			t.Errorf("document %d: labels %v for labels_key %s", i, doc.Labels, w.labelsKey)
		}
		if ids[g.id] {
			t.Errorf("document %d: id %s used twice", i, g.id)
		}
		ids[g.id] = true
	}
	// The id is the time's low 6 bytes then SHA-256 of node, NUL and labels key: the ids
	// documents already stored carry, so that a batch redelivered across an upgrade
	// still meets its document.
	sum := sha256.Sum256([]byte("w1\x00" + `{"instance":"orders"}`))
	wantID := binary.BigEndian.AppendUint64(nil, uint64(ts.UnixMilli()))[2:]
	wantID = append(wantID, sum[:10]...)
	if got[1].id != base64.RawURLEncoding.EncodeToString(wantID) {
		t.Errorf("id %s, want %s", got[1].id, base64.RawURLEncoding.EncodeToString(wantID))
	}
	// The id depends on the identity only.
	again := s.documents([]store.Point{{Node: "w1", Name: "load.1", TS: ts, Value: 0}})
	if again[0].id != docs[0].id {
		t.Errorf("id %s for the same node, time and labels, want %s", again[0].id, docs[0].id)
	}
}

// FuzzAppendBulk: whatever node and label value a point carries, its document encodes
// to JSON that decodes back to them.
func FuzzAppendBulk(f *testing.F) {
	f.Add("wave-1", "orders", int64(1_700_000_000_000), 12.5)
	f.Add("n\"\\\n\u2028<&>", "\x00\x1f\u2029", int64(0), -1e300)
	f.Fuzz(func(t *testing.T, node, value string, ms int64, v float64) {
		p := store.Point{Node: node, Name: "wave.tps", Labels: map[string]string{"instance": value},
			TS: time.UnixMilli(ms), Value: v}
		if p.Validate() != nil || !utf8.ValidString(value) {
			return
		}
		s := testStore(t)
		docs := s.documents([]store.Point{p})
		for _, merge := range []bool{false, true} {
			docs[0].merge = merge
			doc := decodeBulk(t, docs)[0].doc
			if doc.Node != node || doc.Labels["instance"] != value || doc.TS != ms || doc.M["wave.tps"] != v {
				t.Fatalf("decoded %+v, want node %q, label %q, ts %d, value %v", doc, node, value, ms, v)
			}
		}
	})
}

// BenchmarkDocuments: the judge's CPU per point between a store write and the bulk
// request's bytes, for the bench's batches (8 node-level points, then three series per
// instance), 5,000 points per write as the judge's buffer hands them over.
func BenchmarkDocuments(b *testing.B) {
	s, err := New(Options{Prefix: "b-"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	f := benchkit.NewFleet(50, 100)
	ts := time.Date(2026, 2, 3, 10, 0, 0, 0, time.UTC)
	var points []store.Point
	for i := range 50 {
		mb := f.Batch(i, 0, 100, ts, 10*time.Second)
		for _, p := range mb.Points {
			points = append(points, store.Point{Node: mb.Node, Name: p.Name, Labels: p.Labels, TS: ts, Value: p.Value})
		}
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for _, d := range s.documents(points) {
			buf = d.appendBulk(buf)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(points)), "ns/point")
}

// TestDocumentsAsPlainGrouping: over random interleavings of a few nodes, times, label
// sets and names, documents holds every document's last value of each metric, as a
// plain map of maps does, and opens documents in the order of their first points.
func TestDocumentsAsPlainGrouping(t *testing.T) {
	s := testStore(t)
	ts := time.Date(2026, 2, 3, 10, 0, 0, 0, time.UTC)
	labelSets := []map[string]string{nil, {"instance": "a"}, {"instance": "b"}, {"mount": "/"}}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		points := make([]store.Point, 1+r.IntN(60))
		type key struct {
			node, labels string
			ms           int64
		}
		want := map[key]map[string]float64{}
		var order []key
		for i := range points {
			p := store.Point{Node: fmt.Sprintf("w%d", r.IntN(3)), Name: fmt.Sprintf("m%d", r.IntN(5)),
				Labels: labelSets[r.IntN(len(labelSets))], TS: ts.Add(time.Duration(r.IntN(2)) * time.Millisecond), Value: float64(i)}
			points[i] = p
			k := key{p.Node, wire.LabelSetKey(p.Labels), p.TS.UnixMilli()}
			if want[k] == nil {
				want[k] = map[string]float64{}
				order = append(order, k)
			}
			want[k][p.Name] = p.Value
		}
		docs := s.documents(points)
		if len(docs) != len(order) {
			t.Fatalf("round %d: %d documents, want %d", round, len(docs), len(order))
		}
		for i, d := range docs {
			k := order[i]
			if d.node != k.node || d.labelsKey != k.labels || d.ms != k.ms {
				t.Fatalf("round %d: document %d is %s %s %d, want %+v", round, i, d.node, d.labelsKey, d.ms, k)
			}
			got := map[string]float64{}
			for _, m := range d.metrics {
				if _, dup := got[m.name]; dup {
					t.Fatalf("round %d: document %d holds %s twice", round, i, m.name)
				}
				got[m.name] = m.value
			}
			if !maps.Equal(got, want[k]) {
				t.Fatalf("round %d: document %d metrics %v, want %v", round, i, got, want[k])
			}
		}
	}
}
