// Package elastic is the distributed store.Store: raw points in Elasticsearch through
// go-elasticsearch/v8.
//
// Points go to daily indices <Prefix>YYYY.MM.DD (UTC day of the point, default prefix
// "binlake-metrics-"), created on demand from a composable index template the store
// installs. Layout (schema 2): one document per node, time and label set, holding the
// values of every metric of that label set as fields:
//
//	node        keyword  the wave's node id
//	ts          date     epoch milliseconds
//	hour        byte     UTC hour of day of ts, for the hour-of-day profile without
//	                     scripts (the engine may run without the painless module)
//	labels      object   one keyword per label (labels.instance …), for dashboards
//	labels_key  keyword  wire.LabelSetKey(labels): "" for node-level series; queries
//	                     select on it, so that "exactly these labels" is one term
//	m           object   one double per metric: m.cpu.util, m.wave.tps …
//
// Why: the engine's cost is per document far more than per field. An agent's batch of
// 55 points makes 13 documents (one node-level with 27 metrics, the rest per core,
// interface, disk, instance); one document per point capped the two-core test engine
// near 47,000 points/s. A metric name is a field path, so a name that is a dot-prefix
// of another ("wave" and "wave.tps") cannot be stored beside it: the engine refuses the
// documents of whichever comes second. When its refusal names the field, Write sends the
// document again without the metrics it names (a few times at most), so that one custom
// name costs only its own point, not the node's cpu.util and the rest of its document;
// a document whose refusal names none of its metrics (or only them) is refused whole.
// Once it has stored the rest, Write reports the refused points as a
// *store.RefusedError (invalid input) and logs each refused name, once a minute at
// most. The agent's names never collide (Graphite and Metricbeat have the same rule).
//
// A document's _id follows from (node, labels, ts). Write sends each document as a create
// (what an index costs the engine, about a fifth less than an update); if the document
// exists already (a retried or redelivered batch, a batch split between two requests,
// points of it written before), the create answers 409 and the document goes again at
// once as an update with doc_as_upsert, which merges its metrics into the stored ones.
// So a point written again replaces its value and does not count twice, and points of
// one document written by different Writes all stay.
//
// Visibility: Write returns once the engine has acknowledged the points (durable: the
// translog is synced per request), but the indices refresh every RefreshInterval rather
// than per write, which is most of what made ingest fast; Refresh refreshes at once.
//
// Write's documents go out through the store's one bulk indexer: bulk requests of up to
// FlushBytes, Workers of them in flight across all Writes, each answered with only the
// status and error of its items (filter_path). Retention deletes whole daily indices
// and the older part of the day that contains the cut-off.
//
// The judge's records (store.Record) are documents of one index of their own,
// RecordsIndex (binlake-metrics_records), outside the daily indices' pattern.
//
// Statistics come from aggregations: value_count, avg, max and percentiles (TDigest,
// so P95 is approximate: Elasticsearch documents its error as proportional to
// q·(1−q), small at the tails, and exact for small counts).
//
// Upgrading from schema 1 (one document per point, fields name and value): installing
// the template also adds the schema-2 fields to the existing indices' mappings, so that
// writes into the current day's index go on; their schema-1 documents are not read (the
// queries look for m.<name>) and go with retention.
package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/judge/store"
)

// DefaultPrefix starts the names of the daily indices.
const DefaultPrefix = "binlake-metrics-"

const dayLayout = "2006.01.02"

// Options configures the store.
type Options struct {
	// Config is the client configuration (addresses, credentials, TLS, transport).
	// Unless set, the client also retries 429 and 502–504 answers MaxRetries times
	// with exponential back-off.
	Config elasticsearch.Config
	// Prefix of the daily index names; DefaultPrefix when empty. Lowercase, ending in
	// '-' or '.', so that the index pattern <Prefix>* matches only this store's indices
	// (CheckPrefix has every rule).
	Prefix string
	// Shards and Replicas of each daily index (defaults 1 and 0: set Replicas on a
	// cluster with more than one data node).
	Shards, Replicas int
	// TemplatePriority of the index template (default 200), above ones that may match
	// the same pattern.
	TemplatePriority int
	// RefreshInterval is the indices' refresh_interval: how long a written point may
	// take to become visible to queries (default 10 s: dashboards refresh every 10–30 s
	// and the judge's analyses read windows that ended before the current hour, while
	// each refresh makes a segment the engine must later merge).
	RefreshInterval time.Duration
	// Workers bounds the bulk requests in flight across all Writes (default 2), and
	// FlushBytes the body of one (default 5 MB): a larger Write is split into requests
	// sent side by side.
	Workers    int
	FlushBytes int
	// MaxRetries bounds the retries of documents the engine refused with 429, 409 or
	// 5xx inside a bulk answer, and of whole requests refused so (default 5).
	MaxRetries int
	// Backoff returns the wait before retry attempt n (1-based); default exponential
	// from 100 ms to 5 s with jitter.
	Backoff func(attempt int) time.Duration
	// Logger gets the store's debug and warning messages; slog.Default() when nil.
	Logger *slog.Logger
}

// Store is the Elasticsearch store. It is safe for concurrent use.
type Store struct {
	es        *elasticsearch.Client
	transport *lastErrTransport // the client's: its last error, for an error that is only a deadline
	opts      Options
	log       *slog.Logger
	bulk      *bulkIndexer

	refusals logging.Throttle // the warnings of refused metric names: once a minute per name

	mu     sync.RWMutex // held shared by every operation, exclusively by Close
	closed bool

	tmplMu    sync.Mutex
	tmplReady bool // the index template is installed

	noDBQ        bool // the engine lacks _delete_by_query (no reindex module); guarded by tmplMu
	recordsReady bool // the records index exists; guarded by tmplMu
}

var _ store.Store = (*Store)(nil)

// New builds the store. It does not contact the engine: the index template is installed
// by the first Write, so that a judge starts while Elasticsearch is down.
func New(opts Options) (*Store, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if err := CheckPrefix(opts.Prefix); err != nil {
		return nil, fmt.Errorf("elastic store: index prefix %w", err)
	}
	if opts.Shards <= 0 {
		opts.Shards = 1
	}
	if opts.Replicas < 0 {
		return nil, fmt.Errorf("elastic store: replicas %d is negative", opts.Replicas)
	}
	if opts.TemplatePriority <= 0 {
		opts.TemplatePriority = 200
	}
	if opts.RefreshInterval < 0 {
		return nil, fmt.Errorf("elastic store: refresh interval %s is negative", opts.RefreshInterval)
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = 10 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.FlushBytes <= 0 {
		opts.FlushBytes = 5 << 20
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 5
	}
	if opts.Backoff == nil {
		opts.Backoff = backoff.Schedule(100*time.Millisecond, 5*time.Second)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := opts.Config
	if len(cfg.RetryOnStatus) == 0 {
		cfg.RetryOnStatus = []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = opts.MaxRetries
	}
	if cfg.RetryBackoff == nil {
		cfg.RetryBackoff = opts.Backoff
	}
	next := cfg.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	lt := &lastErrTransport{next: next}
	cfg.Transport = lt
	es, err := elasticsearch.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("elastic store: client: %w", err)
	}
	s := &Store{es: es, transport: lt, opts: opts, log: opts.Logger.With("component", "store.elastic"), refusals: logging.Throttle{Every: time.Minute}}
	s.bulk = newBulkIndexer(s, opts.Workers)
	return s, nil
}

// CheckPrefix checks an index prefix (Options.Prefix, judge.yaml's store.elastic.prefix)
// and says every rule it breaks at once, with an example that keeps them all:
// Elasticsearch's rules for index names (lowercase, none of \ / * ? " < > | , # : or a
// space, not starting with _ - +), and a final '-' or '.', so that the pattern <prefix>*
// matches this store's daily indices and no other index whose name merely starts the
// same ("binlake-metrics" would match "binlake-metricsold"). One rule at a time, each
// error's example broke the next rule ("Bad*Prefix-": e.g. "bad*prefix-").
func CheckPrefix(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty: want e.g. %q (the default)", DefaultPrefix)
	case len(p) > 200:
		return fmt.Errorf("%.20q…: %d bytes: want at most 200 (index names end at 255)", p, len(p))
	}
	var broken []string
	if p != strings.ToLower(p) {
		broken = append(broken, "must be lowercase, as index names are")
	}
	if held := heldIndexChars(p); held != "" {
		broken = append(broken, fmt.Sprintf(`must not contain %q: index names cannot hold \ / * ? " < > | , # : or a space`, held))
	}
	if strings.ContainsAny(p[:1], indexStart) {
		broken = append(broken, fmt.Sprintf("must not start with %q: index names cannot start with _, - or +", p[:1]))
	}
	if !strings.HasSuffix(p, "-") && !strings.HasSuffix(p, ".") {
		broken = append(broken, fmt.Sprintf("must end in '-' or '.' (the daily indices are <prefix>YYYY.MM.DD, and the pattern %s* must match only them)", p))
	}
	if len(broken) == 0 {
		return nil
	}
	return fmt.Errorf("%q: %s; e.g. %q", p, strings.Join(broken, "; "), fixedPrefix(p))
}

// indexBad are the characters index names cannot hold, and indexStart those they
// cannot start with.
const (
	indexBad   = `\/*?"<>| ,#:`
	indexStart = "_-+"
)

// heldIndexChars is each character of indexBad that p holds, once, in p's order.
func heldIndexChars(p string) string {
	var held []byte
	for i := 0; i < len(p); i++ {
		if strings.IndexByte(indexBad, p[i]) >= 0 && !slices.Contains(held, p[i]) {
			held = append(held, p[i])
		}
	}
	return string(held)
}

// fixedPrefix is p made to keep every rule CheckPrefix holds it to: lowercased, each
// character an index name cannot hold made '-' (a run of them one), what it cannot start
// with dropped, and ending in '-' (when it ends in neither '-' nor '.'); the default
// when nothing is left of it, or it came out too long.
func fixedPrefix(p string) string {
	p = strings.Map(func(r rune) rune {
		if strings.ContainsRune(indexBad, r) {
			return '-'
		}
		return r
	}, strings.ToLower(p))
	for strings.Contains(p, "--") {
		p = strings.ReplaceAll(p, "--", "-")
	}
	p = strings.TrimLeft(p, indexStart)
	if !strings.HasSuffix(p, "-") && !strings.HasSuffix(p, ".") {
		p += "-"
	}
	if p == "-" || len(p) > 200 { // lowercasing can lengthen it
		return DefaultPrefix
	}
	return p
}

// IndexName is the daily index that holds points of t's UTC day.
func (s *Store) IndexName(t time.Time) string { return s.opts.Prefix + t.UTC().Format(dayLayout) }

func (s *Store) pattern() string { return s.opts.Prefix + "*" }

// Refresh refreshes this store's indices, so that every point written so far is visible.
func (s *Store) Refresh(ctx context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return s.refresh(ctx, s.pattern())
}

func (s *Store) refresh(ctx context.Context, index string) error {
	req := esapi.IndicesRefreshRequest{Index: []string{index}, AllowNoIndices: esapi.BoolPtr(true), IgnoreUnavailable: esapi.BoolPtr(true)}
	_, err := s.do(ctx, req, "refresh "+index)
	return err
}

// engineError is an error answer of the engine.
type engineError struct {
	what   string
	status int
	body   string
}

func (e *engineError) Error() string {
	var parsed struct {
		Error struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.body), &parsed) == nil && parsed.Error.Type != "" {
		return fmt.Sprintf("elastic store: %s: %d %s: %s", e.what, e.status, parsed.Error.Type, parsed.Error.Reason)
	}
	return fmt.Sprintf("elastic store: %s: status %d: %.300s", e.what, e.status, e.body)
}

// unsupported reports an answer that says the engine has no such endpoint: 404/405, or
// the 400 with which an engine without it reads the path as a document API call:
// "Invalid type: expecting [_doc] but got [_delete_by_query]", or "request
// [/idx/_delete_by_query] contains unrecognized parameters" (parameters the document
// API lacks).
func (e *engineError) unsupported(endpoint string) bool {
	switch e.status {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return !strings.Contains(e.body, "index_not_found_exception")
	case http.StatusBadRequest:
		return strings.Contains(e.body, "got ["+endpoint+"]") ||
			(strings.Contains(e.body, "/"+endpoint+"]") && strings.Contains(e.body, "unrecognized parameter"))
	}
	return false
}

// do performs req and returns the body of a 2xx answer; any other answer becomes an
// *engineError.
func (s *Store) do(ctx context.Context, req esapi.Request, what string) ([]byte, error) {
	res, err := req.Do(ctx, s.es)
	if err != nil {
		return nil, fmt.Errorf("elastic store: %s: %w", what, s.transport.explain(err))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("elastic store: %s: read answer: %w", what, err)
	}
	if res.IsError() {
		return nil, &engineError{what: what, status: res.StatusCode, body: string(body)}
	}
	return body, nil
}

// Close waits for running operations and closes the client. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.es.Close(ctx); err != nil && !errors.Is(err, elasticsearch.ErrAlreadyClosed) {
		return fmt.Errorf("elastic store: close client: %w", err)
	}
	return nil
}
