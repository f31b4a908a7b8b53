package judge

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/lbplugins"
)

// Body limits. A placement request is small; a metric batch is bounded by its codec.
const (
	MaxPlacementBytes = 64 << 10
	MaxMetricsBytes   = metric.MaxBatchBytes
	maxExclude        = 10_000
	maxIdentLen       = 255
)

// Error codes of the JSON error body {"error":{"code","message"}}.
const (
	codeInvalid      = "invalid"
	codeUnauthorized = "unauthorized"
	codeNotFound     = "not_found"
	codeTooLarge     = "too_large"
	codeUnavailable  = "unavailable"
	codeMethod       = "method_not_allowed"
	codeInternal     = "internal"
)

// apiError is an error with its HTTP status and code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, codeInvalid, fmt.Sprintf(format, args...)}
}

var errUnauthorized = &apiError{http.StatusUnauthorized, codeUnauthorized, "missing or wrong bearer token"}

// writeError maps an error to its status and JSON body: the only place that does. Only
// internal errors are logged; the others are the client's and are answered.
func (j *Judge) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae *apiError
		mb *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mb):
		ae = &apiError{http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("request body larger than %d bytes", mb.Limit)}
	case errors.Is(err, lbplugins.ErrUnknownAlgorithm):
		ae = &apiError{http.StatusBadRequest, codeInvalid, err.Error()}
	case errors.Is(err, ErrDecode):
		ae = &apiError{http.StatusBadRequest, codeInvalid, err.Error()}
	case errors.Is(err, lbplugins.ErrNoCandidates):
		ae = &apiError{http.StatusServiceUnavailable, codeUnavailable, err.Error()}
	case errors.Is(err, store.ErrClosed):
		ae = &apiError{http.StatusServiceUnavailable, codeUnavailable, "the judge is stopping"}
	default:
		j.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{http.StatusInternalServerError, codeInternal, "internal error"}
	}
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="binlake-judge"`)
	}
	writeJSON(w, ae.status, map[string]any{"error": map[string]string{"code": ae.code, "message": ae.msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":{"code":"internal","message":"encode response"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// routes is the API. Every route here is in judge/api/openapi.json (a test checks it).
func (j *Judge) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(j.recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		j.writeError(w, r, &apiError{http.StatusNotFound, codeNotFound, "no such endpoint: " + r.URL.Path})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		j.writeError(w, r, &apiError{http.StatusMethodNotAllowed, codeMethod, r.Method + " is not allowed on " + r.URL.Path})
	})
	r.Get("/", j.handleStatus)
	r.Get("/healthz", j.handleHealth)
	r.Get("/metrics", promhttp.HandlerFor(j.reg, promhttp.HandlerOpts{Registry: j.reg}).ServeHTTP)
	r.Get("/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(api.OpenAPI)
	})
	r.Route("/v1", func(r chi.Router) {
		r.Get("/nodes", j.handleNodes)
		r.Get("/nodes/{id}", j.handleNode)
		r.Get("/plugins", j.handlePlugins)
		r.With(j.auth).Post("/metrics", j.handleMetrics)
		r.With(j.auth).Post("/placement", j.handlePlacement)
	})
	return r
}

func (j *Judge) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				j.writeError(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// auth requires the bearer token on writes when one is configured. The comparison takes
// the same time whatever the token's content.
func (j *Judge) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if want := j.o.Token.Reveal(); want != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				j.writeError(w, r, errUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// storeHealth is the store buffer's figures in GET /healthz. A judge whose store is down
// is still healthy (it answers placements), so the figures inform and do not decide.
type storeHealth struct {
	Buffered    int64 `json:"buffered"`
	Dropped     int64 `json:"dropped"`
	Written     int64 `json:"written"`
	WriteErrors int64 `json:"write_errors"`
}

func (j *Judge) handleHealth(w http.ResponseWriter, _ *http.Request) {
	c := j.buf.Counters()
	out := map[string]any{"status": "ok", "version": buildinfo.String(), "nodes": len(j.inc.NodeIDs()),
		"store": storeHealth{Buffered: c.Buffered, Dropped: c.Dropped, Written: c.Written, WriteErrors: c.Errors}}
	if s := j.hist.Snapshot(); s != nil {
		out["historical_as_of"] = s.AsOf.UTC()
	}
	writeJSON(w, http.StatusOK, out)
}

// DecodePlacementRequest reads a placement request strictly: one JSON object with known
// fields, a non-empty instance, at most maxExclude exclusions.
func DecodePlacementRequest(r io.Reader) (PlacementRequest, error) {
	var req PlacementRequest
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return req, err
		}
		if errors.Is(err, io.EOF) {
			return req, invalid("empty body: want a JSON object like {\"instance\":\"orders\"}")
		}
		return req, invalid("malformed placement request: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return req, err
		}
		return req, invalid("malformed placement request: data after the JSON object")
	}
	if err := checkIdent("instance", req.Instance); err != nil {
		return req, err
	}
	if len(req.Exclude) > maxExclude {
		return req, invalid("exclude lists %d nodes, at most %d", len(req.Exclude), maxExclude)
	}
	for i, e := range req.Exclude {
		if err := checkIdent(fmt.Sprintf("exclude[%d]", i), e); err != nil {
			return req, err
		}
	}
	if req.Algorithm != "" {
		if err := checkIdent("algorithm", req.Algorithm); err != nil {
			return req, err
		}
	}
	return req, nil
}

func checkIdent(what, s string) error {
	switch {
	case s == "":
		return invalid("%s is empty", what)
	case len(s) > maxIdentLen:
		return invalid("%s is %d bytes, at most %d", what, len(s), maxIdentLen)
	case !utf8.ValidString(s):
		return invalid("%s is not valid UTF-8", what)
	}
	return nil
}

type placementResponse struct {
	Node      string               `json:"node"`
	Algorithm string               `json:"algorithm"`
	Scores    []lbplugins.Score    `json:"scores"`
	Filtered  []lbplugins.Filtered `json:"filtered"`
	DataAsOf  time.Time            `json:"data_as_of"`
}

func (j *Judge) handlePlacement(w http.ResponseWriter, r *http.Request) {
	req, err := DecodePlacementRequest(http.MaxBytesReader(w, r.Body, MaxPlacementBytes))
	if err != nil {
		j.writeError(w, r, err)
		return
	}
	d, err := j.Place(req)
	if err != nil {
		j.writeError(w, r, err)
		return
	}
	if d.Filtered == nil {
		d.Filtered = []lbplugins.Filtered{}
	}
	writeJSON(w, http.StatusOK, placementResponse{Node: d.Node, Algorithm: d.Algorithm, Scores: d.Scores, Filtered: d.Filtered, DataAsOf: d.DataAsOf.UTC()})
}

func (j *Judge) handleMetrics(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMetricsBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			j.m.decodeErrors.WithLabelValues(sourceHTTP).Inc()
		}
		j.writeError(w, r, err)
		return
	}
	if err := j.IngestRaw(data, sourceHTTP); err != nil {
		j.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

type pluginInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Default     bool   `json:"default"`
}

func (j *Judge) handlePlugins(w http.ResponseWriter, _ *http.Request) {
	out := []pluginInfo{}
	for _, name := range lbplugins.Names() {
		if p, ok := j.plugins[name]; ok {
			out = append(out, pluginInfo{Name: name, Description: p.Description(), Default: name == j.o.Algorithm})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"default": j.o.Algorithm, "plugins": out})
}

// nodeSummary is one row of GET /v1/nodes: liveness and the current level (EWMA) of
// every node-level series.
type nodeSummary struct {
	Node      string             `json:"node"`
	Live      bool               `json:"live"`
	LastSeen  time.Time          `json:"last_seen"`
	IntervalS float64            `json:"interval_s"`
	Batches   int64              `json:"batches_this_hour"`
	Load      map[string]float64 `json:"load"`
}

func (j *Judge) summaries() []nodeSummary {
	now := j.now()
	nodes := j.inc.Nodes()
	out := make([]nodeSummary, 0, len(nodes))
	for _, n := range nodes {
		s := nodeSummary{Node: n.Node, Live: j.live(n.LastSeen, n.Interval, now), LastSeen: n.LastSeen.UTC(),
			IntervalS: n.Interval.Seconds(), Batches: n.Batches, Load: map[string]float64{}}
		for _, se := range n.Series {
			if len(se.Labels) == 0 {
				s.Load[se.Name] = se.EWMA
			}
		}
		out = append(out, s)
	}
	return out
}

func (j *Judge) handleNodes(w http.ResponseWriter, _ *http.Request) {
	out := map[string]any{"hour": j.inc.Hour(), "nodes": j.summaries()}
	if s := j.hist.Snapshot(); s != nil {
		out["historical_as_of"] = s.AsOf.UTC()
	}
	writeJSON(w, http.StatusOK, out)
}

type nodeDetail struct {
	nodeSummary
	Current    currentDetail     `json:"current"`
	Historical *historicalDetail `json:"historical"`
}

type currentDetail struct {
	Hour   time.Time    `json:"hour"`
	Series []seriesJSON `json:"series"`
}

type seriesJSON struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	lbplugins.Current
}

type historicalDetail struct {
	AsOf    time.Time                    `json:"as_of"`
	Until   time.Time                    `json:"until"`
	Metrics map[string]lbplugins.History `json:"metrics"`
}

func (j *Judge) handleNode(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	n, ok := j.inc.Node(id)
	snap := j.hist.Snapshot()
	var hist map[string]lbplugins.History
	if snap != nil {
		hist = snap.Nodes[id]
	}
	if !ok && hist == nil {
		j.writeError(w, r, &apiError{http.StatusNotFound, codeNotFound, fmt.Sprintf("unknown node %q", id)})
		return
	}
	d := nodeDetail{Current: currentDetail{Hour: j.inc.Hour(), Series: []seriesJSON{}}}
	d.Node = id
	d.Load = map[string]float64{}
	if ok {
		d.Live = j.live(n.LastSeen, n.Interval, j.now())
		d.LastSeen, d.IntervalS, d.Batches = n.LastSeen.UTC(), n.Interval.Seconds(), n.Batches
		for _, s := range n.Series {
			d.Current.Series = append(d.Current.Series, seriesJSON{Name: s.Name, Labels: s.Labels, Current: s.Current})
			if len(s.Labels) == 0 {
				d.Load[s.Name] = s.EWMA
			}
		}
	}
	if snap != nil {
		if hist == nil {
			hist = map[string]lbplugins.History{}
		}
		d.Historical = &historicalDetail{AsOf: snap.AsOf.UTC(), Until: snap.Until, Metrics: hist}
	}
	writeJSON(w, http.StatusOK, d)
}
