package alarm

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

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/binlake/binlake/internal/buildinfo"
)

// maxSilenceBytes bounds a POST /v1/silences body.
const maxSilenceBytes = 64 << 10

type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

var errUnauthorized = &apiError{http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token"}

// writeError maps an error to its status and JSON body {"error":{"code","message"}}: the
// only place that does. Only internal errors are logged.
func (a *Alarm) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae *apiError
		mb *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mb):
		ae = &apiError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body larger than %d bytes", mb.Limit)}
	case errors.Is(err, ErrInvalidSilence):
		ae = &apiError{http.StatusBadRequest, "invalid", err.Error()}
	case errors.Is(err, ErrSilenceNotFound):
		ae = &apiError{http.StatusNotFound, "not_found", err.Error()}
	default:
		a.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{http.StatusInternalServerError, "internal", "internal error"}
	}
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="binlake-alarm"`)
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

func (a *Alarm) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					a.writeError(w, r, fmt.Errorf("panic: %v", p))
				}
			}()
			next.ServeHTTP(w, r)
		})
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, &apiError{http.StatusNotFound, "not_found", "no such endpoint: " + r.URL.Path})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, &apiError{http.StatusMethodNotAllowed, "method_not_allowed", r.Method + " is not allowed on " + r.URL.Path})
	})
	r.Get("/healthz", a.handleHealth)
	r.Get("/metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg}).ServeHTTP)
	r.Route("/v1", func(r chi.Router) {
		r.Get("/alerts", a.handleAlerts)
		r.Get("/policies", a.handlePolicies)
		r.Get("/silences", a.handleSilences)
		r.With(a.auth).Post("/silences", a.handleCreateSilence)
		r.With(a.auth).Delete("/silences/{id}", a.handleDeleteSilence)
	})
	return r
}

// auth requires the bearer token on writes when one is configured, in constant time.
func (a *Alarm) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if want := a.o.Token.Reveal(); want != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				a.writeError(w, r, errUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (a *Alarm) handleHealth(w http.ResponseWriter, _ *http.Request) {
	p, f, r := a.eng.Counts()
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": buildinfo.String(), "policies": len(a.o.Policies),
		"alerts": map[string]int{"pending": p, "firing": f, "resolved": r}})
}

func (a *Alarm) handleAlerts(w http.ResponseWriter, r *http.Request) {
	state, fp := r.URL.Query().Get("state"), r.URL.Query().Get("fingerprint")
	switch state {
	case "", "pending", "firing", "resolved":
	default:
		a.writeError(w, r, &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("state %q: want pending, firing or resolved", state)})
		return
	}
	out := []AlertView{}
	for _, v := range a.eng.Alerts() {
		if (state == "" || v.State == state) && (fp == "" || v.Fingerprint == fp) {
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"alerts": out})
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
	Labels           map[string]string `json:"labels,omitempty"`
	Channels         []string          `json:"channels"`
}

func (a *Alarm) handlePolicies(w http.ResponseWriter, _ *http.Request) {
	out := make([]policyView, 0, len(a.o.Policies))
	for _, p := range a.o.Policies {
		v := policyView{Name: p.Name, Metric: p.Metric, NoData: p.NoData, Severity: p.Severity.String(), For: p.For.String(),
			KeepFiringFor: p.KeepFiringFor.String(), RepeatInterval: p.RepeatInterval.String(),
			MaxNotifications: p.MaxNotifications, Labels: p.AlertLabels, Channels: p.Channels}
		if p.Cond != nil {
			v.Condition = p.Cond.String()
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"policies": out})
}

type silenceView struct {
	Silence
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

func (a *Alarm) handleSilences(w http.ResponseWriter, _ *http.Request) {
	now := a.o.Now()
	out := []silenceView{}
	for _, s := range a.silences.List() {
		v := silenceView{Silence: s}
		v.Status.State = s.State(now)
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"silences": out})
}

// DecodeSilence reads a silence strictly: one JSON object with known fields. Instead of
// endsAt, "duration" ("2h") may give its length from startsAt (or now).
func DecodeSilence(r io.Reader, now time.Time) (Silence, error) {
	var in struct {
		Silence
		Duration string `json:"duration"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return Silence{}, err
		}
		if errors.Is(err, io.EOF) {
			return Silence{}, fmt.Errorf("%w: empty body", ErrInvalidSilence)
		}
		return Silence{}, fmt.Errorf("%w: malformed JSON: %v", ErrInvalidSilence, err)
	}
	if dec.More() {
		return Silence{}, fmt.Errorf("%w: data after the JSON object", ErrInvalidSilence)
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
		if err != nil || d <= 0 {
			return s, fmt.Errorf("%w: duration %q: want e.g. \"2h\"", ErrInvalidSilence, in.Duration)
		}
		if s.StartsAt.IsZero() {
			s.StartsAt = now
		}
		s.EndsAt = s.StartsAt.Add(d)
	}
	return s, nil
}

func (a *Alarm) handleCreateSilence(w http.ResponseWriter, r *http.Request) {
	s, err := DecodeSilence(http.MaxBytesReader(w, r.Body, maxSilenceBytes), a.o.Now())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	s, err = a.silences.Create(r.Context(), s)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.log.Info("silence created", "id", s.ID, "ends_at", s.EndsAt, "created_by", s.CreatedBy)
	writeJSON(w, http.StatusOK, map[string]string{"silenceID": s.ID})
}

func (a *Alarm) handleDeleteSilence(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := a.silences.Delete(r.Context(), id); err != nil {
		a.writeError(w, r, err)
		return
	}
	a.log.Info("silence deleted", "id", id)
	writeJSON(w, http.StatusOK, map[string]string{"status": "deleted"})
}
