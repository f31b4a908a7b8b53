// Package httpapi is the HTTP plumbing the roles' JSON APIs share: the error body
// {"error":{"code","message"}} and the one place that maps errors to it, panic recovery,
// the bearer-token check on writes, and a server that starts on a listener and stops
// within a bound.
package httpapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/binlake/binlake/internal/config"
)

// Error codes of the JSON error body.
const (
	CodeInvalid      = "invalid"
	CodeUnauthorized = "unauthorized"
	CodeNotFound     = "not_found"
	CodeTooLarge     = "too_large"
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
	// Log receives internal errors, the only ones logged: the others are the client's.
	Log *slog.Logger
	// Realm goes into WWW-Authenticate on 401 answers.
	Realm string
	// Classify maps the role's own errors to a response, or returns nil.
	Classify func(error) *Error
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
	}
	WriteJSON(w, ae.Status, map[string]any{"error": map[string]string{"code": ae.Code, "message": ae.Msg}})
}

// NotFound answers a request for no route.
func (e *Errors) NotFound(w http.ResponseWriter, r *http.Request) {
	e.Write(w, r, &Error{http.StatusNotFound, CodeNotFound, "no such endpoint: " + r.URL.Path})
}

// MethodNotAllowed answers a route asked with the wrong method.
func (e *Errors) MethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	e.Write(w, r, &Error{http.StatusMethodNotAllowed, CodeMethod, r.Method + " is not allowed on " + r.URL.Path})
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
				got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
				if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
					e.Write(w, r, ErrUnauthorized)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Router is a chi router whose panics, unknown routes and wrong methods are answered
// through e.
func (e *Errors) Router() chi.Router {
	r := chi.NewRouter()
	r.Use(e.Recover)
	r.NotFound(e.NotFound)
	r.MethodNotAllowed(e.MethodNotAllowed)
	return r
}

// WriteJSON answers v as JSON with status. HTML characters are not escaped: the API is
// not a web page.
func WriteJSON(w http.ResponseWriter, status int, v any) {
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

// NewServer is an *http.Server for a JSON API, with timeouts that keep slow or idle
// clients from holding connections.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
}

// Server is an *http.Server serving a listener in the background.
type Server struct {
	srv  *http.Server
	done chan struct{}
	once sync.Once
	err  error // set before done closes
}

// Start serves ln with srv in a goroutine. If serving fails (not by Shutdown), onFail,
// when set, is called once with the error, from that goroutine.
func Start(ln net.Listener, srv *http.Server, onFail func(error)) *Server {
	s := &Server{srv: srv, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.err = err
			if onFail != nil {
				onFail(err)
			}
		}
	}()
	return s
}

// Shutdown stops accepting connections and waits up to timeout for the requests in
// flight; past it the remaining connections are closed. It returns when the serving
// goroutine has, with Shutdown's own error (the timeout). It is idempotent.
func (s *Server) Shutdown(timeout time.Duration) error {
	var err error
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err = s.srv.Shutdown(ctx); err != nil {
			s.srv.Close()
		}
		<-s.done
	})
	return err
}

// Err is why serving failed, or nil; valid once Shutdown has returned.
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// ShutdownTimeout is how long RunAPI lets the requests in flight finish once its
// context ends.
const ShutdownTimeout = 10 * time.Second

// RunAPI serves a role's JSON API on ln until ctx ends, then shuts it down (requests in
// flight get ShutdownTimeout). It logs where it serves and calls ready (when set) with
// the bound address. It returns nil after a shutdown, or why serving failed, named
// after the role: in a run group (errgroup), that stops the role.
func RunAPI(ctx context.Context, ln net.Listener, h http.Handler, role string, log *slog.Logger, ready func(addr string)) error {
	failed := make(chan error, 1)
	srv := Start(ln, NewServer(h), func(err error) { failed <- err })
	addr := ln.Addr().String()
	log.Info(role+" API serving", "addr", "http://"+addr)
	if ready != nil {
		ready(addr)
	}
	select {
	case err := <-failed:
		srv.Shutdown(0)
		return fmt.Errorf("%s: http server: %w", role, err)
	case <-ctx.Done():
	}
	if err := srv.Shutdown(ShutdownTimeout); err != nil {
		log.Warn("http shutdown", "err", err)
	}
	return nil
}
