package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/jsonenc"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/remotewrite"
	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/lbplugins"
)

// Body limits. A metric batch is bounded by its codec. A placement request is small,
// but for its exclusions: maxExclude node ids of a hundred bytes or so fit (at 64 KiB
// about 9,000 short ids did not, although the API allowed 10,000).
const (
	MaxPlacementBytes = 1 << 20
	MaxMetricsBytes   = metric.MaxBatchBytes
	maxExclude        = 10_000
	maxIdentLen       = 255
)

// invalid is a 400 answer: the request is malformed.
func invalid(format string, args ...any) error {
	return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalid, format, args...)
}

// classify maps the judge's own errors to their answers, for httpapi.Errors.
func classify(err error) *httpapi.Error {
	switch {
	case errors.Is(err, lbplugins.ErrUnknownAlgorithm), errors.Is(err, ErrDecode):
		return &httpapi.Error{Status: http.StatusBadRequest, Code: httpapi.CodeInvalid, Msg: err.Error()}
	case errors.Is(err, lbplugins.ErrNoCandidates):
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: httpapi.CodeUnavailable, Msg: err.Error()}
	case errors.Is(err, remotewrite.ErrInvalid):
		return &httpapi.Error{Status: http.StatusBadRequest, Code: httpapi.CodeInvalid, Msg: err.Error()}
	case errors.Is(err, remotewrite.ErrUnsupported):
		return &httpapi.Error{Status: http.StatusUnsupportedMediaType, Code: httpapi.CodeUnsupported, Msg: err.Error()}
	case errors.Is(err, remotewrite.ErrTooLarge):
		return &httpapi.Error{Status: http.StatusRequestEntityTooLarge, Code: httpapi.CodeTooLarge, Msg: err.Error()}
	case errors.Is(err, store.ErrFull):
		// The agent keeps the batch and sends it again.
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: httpapi.CodeUnavailable, Msg: err.Error()}
	case errors.Is(err, store.ErrClosed):
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: httpapi.CodeUnavailable, Msg: "the judge is stopping"}
	}
	return nil
}

// writeError answers err through the API's one error mapping.
func (j *Judge) writeError(w http.ResponseWriter, r *http.Request, err error) {
	j.errs.Write(w, r, err)
}

// routes is the API. Every route here is in judge/api/openapi.json (a test checks it).
func (j *Judge) routes() http.Handler {
	j.errs = &httpapi.Errors{Log: j.log, Realm: "binlake-judge", Classify: classify}
	auth := j.errs.RequireBearer(j.o.Token)
	r := j.errs.ServiceRouter(j.reg, api.OpenAPI)
	r.Get("/", j.handleStatus)
	httpapi.Health(r, j.handleHealth)
	httpapi.Ready(r, j.handleReady)
	// What needs the state restored from the store waits for it (afterRestore); the
	// status page, /healthz, /readyz, /metrics and the plugin list answer from the start.
	r.Route("/v1", func(r chi.Router) {
		none := r.With(j.errs.NoQuery) // every route here but /placement (?explain, ?top)
		none.Get("/plugins", j.handlePlugins)
		wait := none.With(j.afterRestore)
		wait.Get("/nodes", j.handleNodes)
		wait.Get("/metric-names", j.handleMetricNames)
		wait.Get("/nodes/{id}", j.handleNode)
		// The token is checked first: a request without it does not wait.
		none.With(auth, j.afterRestore).Post("/metrics", j.handleMetrics)
		r.With(auth, j.afterRestore).Post("/placement", j.handlePlacement)
		wait.Get("/rebalance", j.handleRebalanceView)
		none.With(auth, j.afterRestore).Post("/rebalance", j.handleRebalance)
	})
	r.With(auth, j.afterRestore).Post("/api/v1/write", j.handleRemoteWrite)
	return r
}

// storeHealth is the store buffer's figures in GET /healthz and GET /readyz. A judge
// whose store is down is still healthy (it answers placements), so the figures inform
// /healthz and do not decide it; /readyz decides by the store (readiness.go).
type storeHealth struct {
	Buffered    int64 `json:"buffered"`
	Dropped     int64 `json:"dropped"`
	Written     int64 `json:"written"`
	WriteErrors int64 `json:"write_errors"`
	Refused     int64 `json:"refused"` // of dropped: refused by the store as invalid
}

func (j *Judge) handleHealth(w http.ResponseWriter, r *http.Request) {
	c := j.buf.Counters()
	out := map[string]any{"status": "ok", "version": buildinfo.String(), "nodes": len(j.inc.NodeIDs()),
		"store": storeHealth{Buffered: c.Buffered, Dropped: c.Dropped, Written: c.Written, WriteErrors: c.Errors, Refused: c.Refused}}
	if s := j.hist.Snapshot(); s != nil {
		out["historical_as_of"] = s.AsOf.UTC()
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

// DecodePlacementRequest reads a placement request strictly: one JSON object with known
// fields, a non-empty instance, at most maxExclude exclusions.
func DecodePlacementRequest(r io.Reader) (api.PlacementRequest, error) {
	buf, err := readBody(r)
	defer func() { buf.Reset(); bodyBufs.Put(buf) }() // the pool's buffers are empty
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return api.PlacementRequest{}, err
		}
		return api.PlacementRequest{}, invalid("read placement request: %v", err)
	}
	req, ok := decodePlacementFast(buf.Bytes())
	if !ok {
		if path, bad := jsonenc.InvalidUTF8(buf.Bytes()); bad {
			// encoding/json would replace the bytes with U+FFFD: an id the client did not send.
			return req, invalid("malformed placement request: %s: invalid UTF-8", path)
		}
		if req, err = decodePlacementJSON(buf.Bytes()); err != nil {
			return req, err
		}
	}
	return req, checkPlacement(&req)
}

// decodePlacementJSON is encoding/json's strict decoding of a placement request: the
// judge's definition of one, and the words of its errors.
func decodePlacementJSON(b []byte) (api.PlacementRequest, error) {
	var req api.PlacementRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			return req, invalid("empty body: want a JSON object like {\"instance\":\"orders\"}")
		}
		// Name the field and the JSON type, not the Go type it was meant for.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return req, invalid("malformed placement request: a JSON %s where an object like {\"instance\":\"orders\"} belongs", te.Value)
			}
			if te.Type.Kind() == reflect.Float64 && strings.HasPrefix(te.Value, "number ") {
				return req, invalid("malformed placement request: field %s: %s is out of range", te.Field, te.Value)
			}
			return req, invalid("malformed placement request: field %s: a JSON %s where %s belongs", te.Field, te.Value, httpapi.JSONKind(te.Type.Kind()))
		}
		return req, invalid("malformed placement request: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, invalid("malformed placement request: data after the JSON object")
	}
	if path, ok := jsonenc.DuplicateKey(b); ok {
		return req, invalid("malformed placement request: field %s is given twice", path)
	}
	return req, nil
}

// checkPlacement checks a decoded request's fields.
func checkPlacement(req *api.PlacementRequest) error {
	if err := checkIdent("instance", req.Instance); err != nil {
		return err
	}
	if len(req.Exclude) > maxExclude {
		return invalid("exclude lists %d nodes, at most %d", len(req.Exclude), maxExclude)
	}
	for i, e := range req.Exclude {
		if err := checkIdentAt("exclude", i, e); err != nil {
			return err
		}
	}
	if req.Algorithm != "" {
		if err := checkIdent("algorithm", req.Algorithm); err != nil {
			return err
		}
	}
	if err := checkWorkHint(req.Expected); err != nil {
		return err
	}
	return checkExplain(req)
}

// maxRate bounds a hint's rates: far above what any source writes (10¹² rows or bytes
// per second), low enough that a price times it stays a finite number of cores.
const maxRate = 1e12

// checkWorkHint checks a placement's expected work: rows/s or bytes/s published (the
// binlog read alone does not say what the instance publishes), each rate a finite
// number from 0 to maxRate.
func checkWorkHint(h *api.WorkHint) error {
	if h == nil {
		return nil
	}
	if h.RowsPerS == nil && h.BytesPerS == nil {
		return invalid("expected gives neither rows_per_s nor bytes_per_s: give one or both (binlog_bytes_per_s besides), or leave expected out")
	}
	for _, f := range []struct {
		key  string
		v    *float64
		unit string
	}{{"rows_per_s", h.RowsPerS, "rows/s"}, {"bytes_per_s", h.BytesPerS, "bytes/s"}, {"binlog_bytes_per_s", h.BinlogBytesPerS, "bytes/s"}} {
		if f.v != nil && !(*f.v >= 0 && *f.v <= maxRate) {
			return invalid("expected.%s %v: want a number of %s from 0 to %g", f.key, *f.v, f.unit, float64(maxRate))
		}
	}
	return nil
}

func checkExplain(req *api.PlacementRequest) error {
	switch req.Explain {
	case "", api.ExplainTop, api.ExplainAll:
	default:
		return invalid("explain %q: want %q (the best candidates) or %q (every node)", req.Explain, api.ExplainTop, api.ExplainAll)
	}
	if req.Top < 0 || req.Top > lbplugins.MaxTopK {
		return invalid("top %d: want 1–%d candidates (0, or none: %d)", req.Top, lbplugins.MaxTopK, lbplugins.DefaultTopK)
	}
	return nil
}

func checkIdent(what, s string) error { return checkIdentAt(what, -1, s) }

// checkIdentAt is checkIdent of element index of the list what (-1: not a list); the
// element's name is formatted only for an error, as placements check their exclusions.
func checkIdentAt(what string, index int, s string) error {
	name := func() string {
		if index < 0 {
			return what
		}
		return fmt.Sprintf("%s[%d]", what, index)
	}
	switch {
	case s == "":
		return invalid("%s is empty", name())
	case len(s) > maxIdentLen:
		return invalid("%s is %d bytes, at most %d", name(), len(s), maxIdentLen)
	}
	if err := metric.CheckText(s); err != nil {
		// The metric contract's rule for a node and a label: the ids the judge is asked
		// about are the ones its batches carry. Placement took a NUL, and invalid UTF-8
		// as U+FFFD; rebalance took a NUL.
		return invalid("%s: %v", name(), err)
	}
	return nil
}

func (j *Judge) handlePlacement(w http.ResponseWriter, r *http.Request) {
	req, err := DecodePlacementRequest(http.MaxBytesReader(w, r.Body, MaxPlacementBytes))
	if err == nil && r.URL.RawQuery != "" { // parsing an empty query still allocates
		err = placementQuery(r.URL.Query(), &req)
	}
	if err != nil {
		// A request the judge refuses before placing counts as an invalid placement, as
		// one naming an unknown algorithm does (only those were counted).
		j.m.placements.WithLabelValues("unknown", "invalid").Inc()
		j.writeError(w, r, err)
		return
	}
	ans, err := j.Place(req)
	if err != nil {
		j.writeError(w, r, err)
		return
	}
	bp := answerBufs.Get().(*[]byte)
	b := appendAnswer((*bp)[:0], &ans)
	h := w.Header()
	h["Content-Type"] = contentTypeJSON // canonical keys set directly: Set allocates per call
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	if cap(b) <= 64<<10 { // an explain=all answer is not kept around
		*bp = b
		answerBufs.Put(bp)
	}
}

// contentTypeJSON is shared by every answer; net/http only reads it.
var contentTypeJSON = []string{"application/json"}

// placementQuery applies ?explain= and ?top= over the body's fields.
func placementQuery(q url.Values, req *api.PlacementRequest) error {
	if err := httpapi.CheckQuery(q, []string{"explain", "top"}, "explain", "top"); err != nil {
		return err
	}
	if v := q.Get("explain"); v != "" {
		req.Explain = v
	}
	if v := q.Get("top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return invalid("top %q: want a whole number of candidates, 1–%d (0, or none: %d)", v, lbplugins.MaxTopK, lbplugins.DefaultTopK)
		}
		req.Top = n
	}
	return checkExplain(req)
}

// bodyBufs recycle the buffers metric batches are read into (Decode copies what it keeps).
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads a request's body, at most limit bytes, into a pooled buffer, and calls
// handle with it (valid only during the call). A body past the limit is counted as
// source's decode error and answered 413; a read error is answered too.
func (j *Judge) readBody(w http.ResponseWriter, r *http.Request, limit int64, source string, handle func([]byte)) {
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			bodyBufs.Put(buf)
		}
	}()
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			j.m.decodeErrors.WithLabelValues(source).Inc()
		}
		j.writeError(w, r, err)
		return
	}
	handle(buf.Bytes())
}

func (j *Judge) handleMetrics(w http.ResponseWriter, r *http.Request) {
	j.readBody(w, r, MaxMetricsBytes, sourceHTTP, func(data []byte) {
		if j.o.Relay != nil {
			if err := j.relay(r.Context(), data); err != nil {
				j.writeError(w, r, err)
				return
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		b, err := j.decode(data, sourceHTTP)
		if err == nil {
			err = j.ingestStored(r.Context(), sourceHTTP, b)
		}
		if err != nil {
			j.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

type pluginInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Default     bool   `json:"default"`
}

func (j *Judge) handlePlugins(w http.ResponseWriter, r *http.Request) {
	out := []pluginInfo{}
	for _, name := range lbplugins.Names() {
		if p, ok := j.plugins[name]; ok {
			out = append(out, pluginInfo{Name: name, Description: p.Description(), Default: name == j.o.Algorithm})
		}
	}
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"default": j.o.Algorithm, "plugins": out})
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
	// Stopped are the node-level series the node's batches no longer carry
	// (analysis.StoppedAfter: its wave stopped reporting, a collector fails), with the
	// time of each one's last sample. They are not in Load, as placements do not see
	// them: a level from before they stopped is not the node's figure now.
	Stopped map[string]time.Time `json:"stopped,omitempty"`
	// Wave is whether the node's wave is up and, when not, why (waveStatusOf); nil for
	// a node that has reported no wave. The node is live while its agent reports, its
	// wave maybe not.
	Wave *api.WaveStatus `json:"wave,omitempty"`
}

// summaryOf is node n's row of GET /v1/nodes.
func (j *Judge) summaryOf(n analysis.Node, now time.Time) nodeSummary {
	s := nodeSummary{Node: n.Node, Live: j.live(n.LastSeen, n.Interval, now), LastSeen: n.LastSeen.UTC(),
		IntervalS: n.Interval.Seconds(), Batches: n.Batches, Load: map[string]float64{}}
	if ws, ok := j.waveStatusOf(n, now); ok {
		s.Wave = &ws
	}
	for _, se := range n.Series {
		switch {
		case len(se.Labels) > 0:
		case n.Stopped(se):
			if s.Stopped == nil {
				s.Stopped = map[string]time.Time{}
			}
			s.Stopped[se.Name] = se.LastTS
		default:
			s.Load[se.Name] = significant(se.EWMA)
		}
	}
	return s
}

// significant is v to 12 significant digits: the smoothing's rounding left a wave of 7
// instances at 7.000000000000002 in the listing (an outside trial).
func significant(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}

func (j *Judge) summaries() []nodeSummary {
	now := j.now()
	nodes := j.inc.Nodes()
	out := make([]nodeSummary, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, j.summaryOf(n, now))
	}
	return out
}

func (j *Judge) handleNodes(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"hour": j.inc.Hour(), "nodes": j.summaries()}
	if s := j.hist.Snapshot(); s != nil {
		out["historical_as_of"] = s.AsOf.UTC()
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
}

type nodeDetail struct {
	nodeSummary
	Current    currentDetail     `json:"current"`
	Historical *historicalDetail `json:"historical"`
	// Reservations are placements onto the node that it does not report yet.
	Reservations []api.Reservation `json:"reservations"`
	// Instances are the instances the node runs, in the judge's view, with their costs
	// (costs.go; in cores at the node's prices, loadview.go), sorted by instance. A down
	// wave's (Wave.Live false) are the ones its last report said it ran, as GET
	// /v1/rebalance has them (asOfWave) and fails them over: the node's listing had none
	// of a silent wave's while the plan moved them off it.
	Instances []api.InstanceCost `json:"instances"`
	// InstancesAsOf is set when the wave is down: the time of the report Instances are
	// from (Wave.LastSeen).
	InstancesAsOf *time.Time `json:"instances_as_of,omitempty"`
	// Capacity is the node's cores, prices and utilisation (a wave node only).
	Capacity *api.NodeLoad `json:"capacity,omitempty"`
}

type currentDetail struct {
	Hour   time.Time    `json:"hour"`
	Series []seriesJSON `json:"series"`
}

type seriesJSON struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	lbplugins.Current
	LastTS time.Time `json:"last_ts,omitzero"`
}

type historicalDetail struct {
	AsOf    time.Time                    `json:"as_of"`
	Until   time.Time                    `json:"until"`
	Metrics map[string]lbplugins.History `json:"metrics"`
}

func (j *Judge) handleNode(w http.ResponseWriter, r *http.Request) {
	id, err := httpapi.PathParam(r, "id")
	if err != nil {
		j.writeError(w, r, err)
		return
	}
	n, ok := j.inc.Node(id)
	snap := j.hist.Snapshot()
	var hist map[string]lbplugins.History
	if snap != nil {
		hist = snap.Nodes[id]
	}
	if !ok && hist == nil {
		j.writeError(w, r, httpapi.Errorf(http.StatusNotFound, httpapi.CodeNotFound, "unknown node %.80q", id))
		return
	}
	d := nodeDetail{Current: currentDetail{Hour: j.inc.Hour(), Series: []seriesJSON{}}, Reservations: j.Reservations(id),
		Instances: []api.InstanceCost{}}
	if d.Reservations == nil {
		d.Reservations = []api.Reservation{}
	}
	d.Node = id
	d.Load = map[string]float64{}
	if ok {
		d.nodeSummary = j.summaryOf(n, j.now())
		for _, s := range n.Series {
			d.Current.Series = append(d.Current.Series, seriesJSON{Name: s.Name, Labels: s.Labels, Current: s.Current, LastTS: s.LastTS})
		}
		down := d.Wave != nil && !d.Wave.Live
		if down {
			d.InstancesAsOf = &d.Wave.LastSeen
		}
		var reserved float64
		for _, r := range d.Reservations {
			reserved += r.Cores
		}
		d.Instances, d.Capacity = j.nodeLoad(n, down, snap, reserved)
	}
	if snap != nil {
		if hist == nil {
			hist = map[string]lbplugins.History{}
		}
		d.Historical = &historicalDetail{AsOf: snap.AsOf.UTC(), Until: snap.Until, Metrics: hist}
	}
	httpapi.WriteJSON(w, r, http.StatusOK, d)
}
