// Package httpapi is the HTTP plumbing the roles' JSON APIs share: the error body
// {"error":{"code","message"}} and the one place that maps errors to it, panic recovery,
// the bearer-token check on writes, and a server that starts on a listener and stops
// within a bound.
package httpapi

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/binlake/binlake/internal/config"
)

// Error codes of the JSON error body.
const (
	CodeInvalid      = "invalid"
	CodeUnauthorized = "unauthorized"
	CodeNotFound     = "not_found"
	CodeTooLarge     = "too_large"
	CodeUnsupported  = "unsupported_media_type"
	CodeUnavailable  = "unavailable"
	CodeMethod       = "method_not_allowed"
	CodeInternal     = "internal"
)

// Error is an error with its HTTP status and code; its message is the client's to read.
type Error struct {
	Status int
	Code   string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Errorf builds an *Error.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ErrUnauthorized answers a request without the right bearer token.
var ErrUnauthorized = &Error{http.StatusUnauthorized, CodeUnauthorized, "missing or wrong bearer token"}

// Errors writes error responses for one API.
type Errors struct {
	// Log receives internal errors and, once a minute per client and path, refused
	// tokens (a sender misconfigured says so only in its own log); the others are the
	// client's.
	Log *slog.Logger
	// Realm goes into WWW-Authenticate on 401 answers.
	Realm string
	// Classify maps the role's own errors to a response, or returns nil.
	Classify func(error) *Error

	// refusals throttles the warnings of refused tokens (warnRefused).
	refusals refusalLog
}

// Write maps err to its status and JSON body: the only place that does. An *Error is
// answered as is, a body over its limit with 413, then Classify decides, and anything
// else is an internal error (500, logged, its text not shown).
func (e *Errors) Write(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae *Error
		mb *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mb):
		ae = Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body larger than %d bytes", mb.Limit)
	default:
		if e.Classify != nil {
			ae = e.Classify(err)
		}
		if ae == nil {
			e.Log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
			ae = &Error{http.StatusInternalServerError, CodeInternal, "internal error"}
		}
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+e.Realm+`"`)
		e.warnRefused(r)
	}
	WriteJSON(w, r, ae.Status, map[string]any{"error": map[string]string{"code": ae.Code, "message": ae.Msg}})
}

// NotFound answers a request for no route.
func (e *Errors) NotFound(w http.ResponseWriter, r *http.Request) {
	e.Write(w, r, &Error{http.StatusNotFound, CodeNotFound, "no such endpoint: " + r.URL.Path})
}

// MethodNotAllowed answers a route asked with the wrong method, with the methods it
// takes in Allow (RFC 9110, 15.5.6: a 405 must say them). chi passes them only to its
// own 405 handler, so they are found again by asking the router each method.
func (e *Errors) MethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	msg := r.Method + " is not allowed on " + r.URL.Path
	if ms := allowed(r); len(ms) > 0 {
		w.Header().Set("Allow", strings.Join(ms, ", "))
		msg += " (it takes " + strings.Join(ms, ", ") + ")"
	}
	e.Write(w, r, &Error{http.StatusMethodNotAllowed, CodeMethod, msg})
}

// allowed is the methods the router serving r has a route for at r's path.
func allowed(r *http.Request) []string {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil || rctx.Routes == nil {
		return nil
	}
	// The whole path, as the router matched it: Routes is the outermost router, whose
	// Match walks into its sub-routers (RoutePath is the path left to a sub-router).
	path := cmp.Or(r.URL.RawPath, r.URL.Path)
	var ms []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		// HEAD is served wherever GET is (Router's GetHead), with or without a route.
		if rctx.Routes.Match(chi.NewRouteContext(), m, path) || m == http.MethodHead && slices.Contains(ms, http.MethodGet) {
			ms = append(ms, m)
		}
	}
	return ms
}

// Recover answers a panicking handler with an internal error instead of dropping the
// connection; http.ErrAbortHandler keeps its meaning (abort the response).
func (e *Errors) Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				e.Write(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// RequireBearer requires "Authorization: Bearer <token>" when token is set; an empty
// token lets every request through. The comparison takes the same time whatever the
// token's content.
func (e *Errors) RequireBearer(token config.Secret) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if want := token.Reveal(); want != "" {
				got, ok := bearer(r.Header.Get("Authorization"))
				if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
					e.Write(w, r, ErrUnauthorized)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bearer is the token of an Authorization header of the Bearer scheme, whose name is
// case-insensitive (RFC 9110, 11.1: "bearer", "BEARER" and "Bearer" alike).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return token, true
}

// PathParam is the URL parameter name of r's route, unescaped. The router matches the
// path as the client escaped it when that differs from Go's own escaping (URL.RawPath
// set: an escaped '/', "a%2Fb"), and the parameter is then still escaped; otherwise it
// is already decoded ("a b", "50%off"). A malformed escape is a 400 naming the parameter.
func PathParam(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", Errorf(http.StatusBadRequest, CodeInvalid, "path parameter %s: %v", name, err)
	}
	return u, nil
}

// Router is a chi router whose panics, unknown routes and wrong methods are answered
// through e, and that answers HEAD wherever it answers GET (RFC 9110; uptime checkers
// probe with HEAD: every GET route but /healthz and /readyz was a 405): a HEAD is the
// GET's status and headers, net/http drops the body.
func (e *Errors) Router() chi.Router {
	r := chi.NewRouter()
	r.Use(e.Recover, middleware.GetHead)
	r.NotFound(e.NotFound)
	r.MethodNotAllowed(e.MethodNotAllowed)
	return r
}

// ServiceRouter is Router with what every role's API serves beside its own routes:
// GET /metrics from reg, and GET /openapi.json, the role's contract.
func (e *Errors) ServiceRouter(reg *prometheus.Registry, openAPI []byte) chi.Router {
	r := e.Router()
	r.Get("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}).ServeHTTP)
	r.Get("/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	return r
}

// Health serves h at GET and HEAD /healthz: load balancers and orchestrators probe
// with HEAD (Router answers HEAD on every GET route; this one's is in the contract).
// The wave's and the agent's /healthz, on net/http's ServeMux, take HEAD with their GET.
func Health(r chi.Router, h http.HandlerFunc) {
	r.Get("/healthz", h)
	r.Head("/healthz", h)
}

// RetryAfterSeconds is the Retry-After of every 503 the roles' APIs answer (WriteJSON).
// A 503 says that what the role needs is down or busy (the judge's store or its bus
// relay, the alarm's coordinator), that it has no live node to place on, or that it is
// stopping: states that last seconds to minutes. Two seconds spare a full store buffer
// the immediate retries of every sender (it drains at the store's pace, and a down
// store's writes are retried from 100 ms up to 10 s) and still bring an agent (interval
// 10 s) back within its interval once the judge is back. Clients that read it: the
// agent (bounded, agent/sink.go), recent Prometheus remote write on a 5xx.
const RetryAfterSeconds = 2

// Ready serves h at GET and HEAD /readyz, as Health does /healthz: a role that can be
// alive and still not do its job (the judge with its store down) answers 503 there, and
// a load balancer or an orchestrator takes it out of service without restarting it.
func Ready(r chi.Router, h http.HandlerFunc) {
	r.Get("/readyz", h)
	r.Head("/readyz", h)
}

// WriteJSON answers r with v as JSON with status; a 503 carries Retry-After
// (RetryAfterSeconds) unless the handler set one. HTML characters are not escaped: the
// API is not a web page. An answer that cannot be encoded (a NaN or an infinity, which
// JSON has not) is a 500, logged with what failed through the logger of the server that
// serves r (Serve), as the client's "encode response" says nothing of the cause.
func WriteJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		requestLogger(r).Error("an API answer could not be encoded as JSON",
			"method", r.Method, "path", r.URL.Path, "type", fmt.Sprintf("%T", v), "err", err)
		http.Error(w, `{"error":{"code":"internal","message":"encode response"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// loggerKey is the context key under which Serve hands its requests the role's logger.
type loggerKey struct{}

// requestLogger is the logger of the server that serves r (Serve's), or slog's default
// for a request served otherwise (a test's httptest server).
func requestLogger(r *http.Request) *slog.Logger {
	if l, ok := r.Context().Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// JSONKind names the JSON type a Go kind decodes from, with its article.
func JSONKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "a whole number" // "a JSON number 1.5 where a number belongs" said nothing
	case reflect.Float64:
		return "a number"
	}
	return "an object"
}

// CheckQuery refuses a query parameter r's route does not take (a typo such as
// ?stat=firing would otherwise be ignored and the answer unfiltered), and one of once
// given more than once. It names the parameter and those the route takes.
func CheckQuery(q url.Values, takes []string, once ...string) error {
	for k, vs := range q {
		switch {
		case len(takes) == 0:
			return Errorf(http.StatusBadRequest, CodeInvalid, "unknown query parameter %q (this endpoint takes none)", k)
		case !slices.Contains(takes, k):
			return Errorf(http.StatusBadRequest, CodeInvalid, "unknown query parameter %q (this endpoint takes %s)", k, strings.Join(takes, ", "))
		case len(vs) > 1 && slices.Contains(once, k):
			return Errorf(http.StatusBadRequest, CodeInvalid, "query parameter %q is given %d times: give it once", k, len(vs))
		}
	}
	return nil
}

// NoQuery is CheckQuery for the routes that take no query parameter, as middleware: a
// filter such as GET /v1/nodes?node=x was ignored and answered every node, where the
// routes that take parameters refused an unknown one.
func (e *Errors) NoQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := CheckQuery(r.URL.Query(), nil); err != nil {
			e.Write(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
