package alarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/binlake/binlake/alarm/api"
	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/jsonenc"
)

// maxSilenceBytes bounds a POST /v1/silences body.
const maxSilenceBytes = 64 << 10

// classify maps the alarm's own errors to their answers, for httpapi.Errors.
func classify(err error) *httpapi.Error {
	switch {
	case errors.Is(err, ErrInvalidSilence):
		return &httpapi.Error{Status: http.StatusBadRequest, Code: httpapi.CodeInvalid, Msg: err.Error()}
	case errors.Is(err, ErrSilenceNotFound):
		return &httpapi.Error{Status: http.StatusNotFound, Code: httpapi.CodeNotFound, Msg: err.Error()}
	case errors.Is(err, errSilencesUnavailable):
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: httpapi.CodeUnavailable, Msg: err.Error()}
	}
	return nil
}

// writeError answers err through the API's one error mapping.
func (a *Alarm) writeError(w http.ResponseWriter, r *http.Request, err error) {
	a.errs.Write(w, r, err)
}

// routes is the API. Every route here is in alarm/api/openapi.json (a test checks it).
func (a *Alarm) routes() http.Handler {
	a.errs = &httpapi.Errors{Log: a.log, Realm: "binlake-alarm", Classify: classify}
	auth := a.errs.RequireBearer(a.o.Token)
	r := a.errs.ServiceRouter(a.reg, api.OpenAPI)
	r.Get("/", a.handleIndex)
	httpapi.Health(r, a.handleHealth)
	r.Route("/v1", func(r chi.Router) {
		r.Get("/alerts", a.handleAlerts) // its filters: handleAlerts checks them
		none := r.With(a.errs.NoQuery)
		none.Get("/policies", a.handlePolicies)
		none.Get("/silences", a.handleSilences)
		none.With(auth).Post("/silences", a.handleCreateSilence)
		none.With(auth).Delete("/silences/{id}", a.handleDeleteSilence)
	})
	return r
}

// indexPage is the alarm's front page: what it holds, in counts, and links to its API.
// The judge's status page shows the firing alerts themselves.
var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>BinLake alarm</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}li{margin:.2em 0}.err{color:#b00}small{color:#666}</style>
</head><body>
<h1>BinLake alarm</h1>
<p><small>version {{.Version}}</small></p>
<p id="counts">{{.Policies}} {{if eq .Policies 1}}policy{{else}}policies{{end}} · {{if .Firing}}<span class="err">{{.Firing}} firing</span>{{else}}0 firing{{end}} · {{.Pending}} pending · {{.Resolved}} resolved · {{.Silences}} {{if eq .Silences 1}}silence{{else}}silences{{end}}</p>
<h2>API</h2>
<ul>
<li><a href="v1/alerts?state=firing">GET /v1/alerts?state=firing</a>: the firing alerts (<a href="v1/alerts">all</a>: pending, firing, resolved)</li>
<li><a href="v1/policies">GET /v1/policies</a>: the alert policies</li>
<li><a href="v1/silences">GET /v1/silences</a>: the silences; POST /v1/silences and DELETE /v1/silences/{id} create and delete one{{if .Token}} (with the token){{end}}</li>
<li><a href="openapi.json">GET /openapi.json</a>: this API, OpenAPI 3</li>
<li><a href="metrics">GET /metrics</a> (Prometheus) · <a href="healthz">GET /healthz</a></li>
</ul>
</body></html>
`))

func (a *Alarm) handleIndex(w http.ResponseWriter, _ *http.Request) {
	p, f, res := a.eng.Counts()
	data := struct {
		Version                             string
		Policies, Pending, Firing, Resolved int
		Silences                            int
		Token                               bool
	}{Version: buildinfo.String(), Policies: len(a.o.Policies), Pending: p, Firing: f, Resolved: res,
		Silences: len(a.silences.List()), Token: a.o.Token != ""}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := indexPage.Execute(w, data); err != nil {
		a.log.Error("front page", "err", err)
	}
}

// handleHealth is liveness, with the alert counts; "taking_over" is true from a start
// until the alarm took over the partitions the bus gave it, and with them their alerts:
// until then the counts and GET /v1/alerts miss alerts that are firing (seconds after a
// restart, the group's session timeout after a kill -9). Then they list the alerts the
// notification log holds firing on those partitions' nodes, before their next batches.
func (a *Alarm) handleHealth(w http.ResponseWriter, r *http.Request) {
	p, f, res := a.eng.Counts()
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"status": "ok", "version": buildinfo.String(), "policies": len(a.o.Policies),
		"alerts": map[string]int{"pending": p, "firing": f, "resolved": res}, "taking_over": a.own != nil && !a.own.tookOverOnce()})
}

func (a *Alarm) handleAlerts(w http.ResponseWriter, r *http.Request) {
	// ?state= and ?fingerprint= may each be given more than once: any of them matches.
	q := r.URL.Query()
	if err := httpapi.CheckQuery(q, []string{"state", "fingerprint"}); err != nil {
		a.writeError(w, r, err)
		return
	}
	states, fps := q["state"], q["fingerprint"]
	for _, state := range states {
		switch state {
		case api.StatePending, api.StateFiring, api.StateResolved:
		default:
			a.writeError(w, r, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalid, "state %q: want pending, firing or resolved", state))
			return
		}
	}
	out := []AlertView{}
	for _, v := range a.eng.Alerts() {
		if (len(states) == 0 || slices.Contains(states, v.State)) && (len(fps) == 0 || slices.Contains(fps, v.Fingerprint)) {
			out = append(out, v)
		}
	}
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"alerts": out})
}

type policyView struct {
	Name             string            `json:"name"`
	Metric           string            `json:"metric,omitempty"`
	Condition        string            `json:"condition,omitempty"`
	NoData           int               `json:"nodata,omitempty"`
	Severity         string            `json:"severity"`
	For              string            `json:"for"`
	KeepFiringFor    string            `json:"keepFiringFor"`
	RepeatInterval   string            `json:"repeatInterval"`
	MaxNotifications int               `json:"maxNotifications"`
	GroupBy          []string          `json:"groupBy"`
	Labels           map[string]string `json:"labels,omitempty"`
	Channels         []string          `json:"channels"`
}

func (a *Alarm) handlePolicies(w http.ResponseWriter, r *http.Request) {
	out := make([]policyView, 0, len(a.o.Policies))
	for _, p := range a.o.Policies {
		v := policyView{Name: p.Name, Metric: p.Metric, NoData: p.NoData, Severity: p.Severity.String(), For: p.For.String(),
			KeepFiringFor: p.KeepFiringFor.String(), RepeatInterval: p.RepeatInterval.String(),
			MaxNotifications: p.MaxNotifications, GroupBy: p.GroupBy, Labels: p.AlertLabels, Channels: p.Channels}
		if p.Cond != nil {
			v.Condition = p.Cond.String()
		}
		out = append(out, v)
	}
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"policies": out})
}

type silenceView struct {
	Silence
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	// Warnings say why the silence mutes none of the alerts of a policy it names
	// (Silence.Unmatchable): one made before the policies changed says so here too.
	Warnings []string `json:"warnings,omitempty"`
}

func (a *Alarm) handleSilences(w http.ResponseWriter, r *http.Request) {
	now := a.o.Now()
	out := []silenceView{}
	for _, s := range a.silences.List() {
		v := silenceView{Silence: s, Warnings: s.Unmatchable(a.o.Policies)}
		v.Status.State = s.State(now)
		out = append(out, v)
	}
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"silences": out})
}

// DecodeSilence reads a silence strictly: one JSON object with known fields, none given
// twice. Instead of endsAt, "duration" ("2h") may give its length from startsAt (or now).
// Its errors name the field and the JSON type, not the Go type it was meant for.
func DecodeSilence(r io.Reader, now time.Time) (Silence, error) {
	var in struct {
		Silence
		Duration string `json:"duration"`
	}
	data, err := io.ReadAll(r)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return Silence{}, err
		}
		return Silence{}, fmt.Errorf("%w: read: %v", ErrInvalidSilence, err)
	}
	switch b := bytes.TrimSpace(data); {
	case len(b) == 0:
		return Silence{}, fmt.Errorf("%w: empty body: want a JSON object like %s", ErrInvalidSilence, silenceExample)
	case b[0] != '{':
		return Silence{}, fmt.Errorf("%w: want a JSON object like %s", ErrInvalidSilence, silenceExample)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		var pe *time.ParseError
		switch {
		case errors.As(err, &te) && te.Field != "":
			// The silence's fields are those of the embedded Silence, which the path names.
			field := strings.TrimPrefix(te.Field, "Silence.")
			return Silence{}, fmt.Errorf("%w: field %s: a JSON %s where %s belongs", ErrInvalidSilence, field, te.Value, httpapi.JSONKind(te.Type.Kind()))
		case errors.As(err, &pe):
			return Silence{}, fmt.Errorf("%w: %q is not an RFC 3339 time (startsAt and endsAt are like 2026-12-04T21:00:00Z)", ErrInvalidSilence, pe.Value)
		}
		return Silence{}, fmt.Errorf("%w: malformed JSON: %v", ErrInvalidSilence, err)
	}
	if dec.More() {
		return Silence{}, fmt.Errorf("%w: data after the JSON object", ErrInvalidSilence)
	}
	if path, ok := jsonenc.DuplicateKey(data); ok {
		return Silence{}, fmt.Errorf("%w: field %s is given twice", ErrInvalidSilence, path)
	}
	s := in.Silence
	if in.ID != "" {
		return s, fmt.Errorf("%w: id is assigned by the alarm", ErrInvalidSilence)
	}
	if in.Duration != "" {
		if !s.EndsAt.IsZero() {
			return s, fmt.Errorf("%w: give endsAt or duration, not both", ErrInvalidSilence)
		}
		d, err := time.ParseDuration(in.Duration)
		switch {
		case err != nil:
			return s, fmt.Errorf("%w: duration %q: %v (want e.g. \"2h\")", ErrInvalidSilence, in.Duration, err)
		case d <= 0:
			return s, fmt.Errorf("%w: duration %q: want a positive length, e.g. \"2h\"", ErrInvalidSilence, in.Duration)
		}
		if s.StartsAt.IsZero() {
			s.StartsAt = now
		}
		s.EndsAt = s.StartsAt.Add(d)
	}
	return s, nil
}

// silenceExample is a silence as POST /v1/silences takes it, for the errors that say
// what a body should look like.
const silenceExample = `{"matchers":[{"name":"node","value":"wave-1"}],"duration":"2h","createdBy":"ops","comment":"upgrade"}`

// silenceWriteTimeout bounds a silence's creation or deletion: the silences are in the
// coordinator, and a request must not hang while ZooKeeper is out of reach (a partition
// held it open for minutes).
var silenceWriteTimeout = 10 * time.Second

// errSilencesUnavailable marks a silence write the coordinator did not answer (503).
var errSilencesUnavailable = errors.New("the coordinator (ZooKeeper) that keeps the silences is unavailable")

// silenceWriteError says why a silence write failed: the request's own fault, or the
// coordinator's absence, which a retry may cure.
func silenceWriteError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, ErrInvalidSilence), errors.Is(err, ErrSilenceNotFound), errors.Is(err, errSilencesCorrupt):
		return err
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer within %s (%v); nothing was changed, or the change may yet be stored: list the silences before trying again",
			errSilencesUnavailable, silenceWriteTimeout, err)
	}
	return fmt.Errorf("%w: %v; try again", errSilencesUnavailable, err)
}

func (a *Alarm) handleCreateSilence(w http.ResponseWriter, r *http.Request) {
	s, err := DecodeSilence(http.MaxBytesReader(w, r.Body, maxSilenceBytes), a.o.Now())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), silenceWriteTimeout)
	defer cancel()
	s, err = a.silences.Create(ctx, s)
	if err != nil {
		a.writeError(w, r, silenceWriteError(ctx, err))
		return
	}
	a.log.Info("silence created", "id", s.ID, "ends_at", s.EndsAt, "created_by", s.CreatedBy)
	answer := map[string]any{"silenceID": s.ID}
	if warn := s.Unmatchable(a.o.Policies); warn != nil {
		// Kept all the same, as Alertmanager keeps a silence that matches nothing yet: the
		// policies may change; the caller is told why it will not mute what it names.
		a.log.Warn("silence created that mutes nothing it names", "id", s.ID, "warnings", warn)
		answer["warnings"] = warn
	}
	httpapi.WriteJSON(w, r, http.StatusOK, answer)
}

func (a *Alarm) handleDeleteSilence(w http.ResponseWriter, r *http.Request) {
	id, err := httpapi.PathParam(r, "id")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), silenceWriteTimeout)
	defer cancel()
	if err := a.silences.Delete(ctx, id); err != nil {
		a.writeError(w, r, silenceWriteError(ctx, err))
		return
	}
	a.log.Info("silence deleted", "id", id)
	httpapi.WriteJSON(w, r, http.StatusOK, map[string]string{"status": "deleted"})
}
