package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FieldError is a problem with the value of one key, found by a Validate method or by
// the checks a role runs on its config before it starts (a secret file, a TLS key pair).
// Field is the key's dotted path as the file spells it ("store.elastic.prefix",
// "bus.brokers[1]", "channels.ops.url_file"); Err says what is wrong and what is wanted.
// Decode, and Locate for the checks run after loading, turn it into an *Error that names
// the file and the key's line, so that the operator is sent to the line to change.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %v", e.Field, e.Err) }
func (e *FieldError) Unwrap() error { return e.Err }

// Bad is a *FieldError about the key at field; format and args as fmt.Errorf (%w wraps).
// Every string among args is shown through Redact: a value quoted back to the operator
// may hold a password (kafka:pw@host:9092 where host:port belongs), and no secret is
// ever echoed in an error. An error passed for %w must say its value redacted itself.
func Bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, redactArgs(args)...)}
}

// Locate names the file and the lines in err, the result of checks run on the config
// loaded from file: each *FieldError (alone or joined with errors.Join) becomes an
// *Error at the line of its key, or of the nearest enclosing key the file has when the
// key itself is absent (a default, a required key left out); the others are prefixed
// with the file. The problems come out in the file's order. nil stays nil.
func Locate(file string, err error) error {
	if err == nil {
		return nil
	}
	var root *yaml.Node
	if f, oerr := os.Open(file); oerr == nil {
		data, _ := io.ReadAll(io.LimitReader(f, MaxFileBytes))
		f.Close()
		var n yaml.Node
		if yaml.NewDecoder(bytes.NewReader(data)).Decode(&n) == nil {
			root = &n
		}
	}
	return locate(file, root, err)
}

// locate is Locate with the file's node tree at hand (nil when it could not be read).
func locate(file string, root *yaml.Node, err error) error {
	leaves := flatten(err, nil)
	paths := map[int][]entry{}
	if root != nil {
		collectPaths(root, "", paths)
	}
	lines := map[string]int{}
	for line, es := range paths {
		for _, e := range es {
			if l, ok := lines[e.path]; !ok || line < l {
				lines[e.path] = line
			}
		}
	}
	out := make([]error, len(leaves))
	at := make([]int, len(leaves))
	for i, leaf := range leaves {
		var fe *FieldError
		var located *Error
		switch {
		case errors.As(leaf, &located):
			out[i], at[i] = leaf, located.Line
		case isFieldError(leaf, &fe):
			line := lineOf(lines, fe.Field)
			// Bad redacts the strings it formats, not an error wrapped with %w that
			// quotes a value of the file: any value holding a credential is hidden here.
			msg := redactNodeValues(root, fe.Err.Error())
			out[i] = &Error{File: file, Line: line, Field: fe.Field, Msg: msg, Err: fe.Err}
			at[i] = line
		default:
			out[i] = fmt.Errorf("%s: %w", file, leaf)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	// The file's order; the ones without a line (0) first, in the checks' order.
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return at[a] - at[b] })
	sorted := make([]error, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return errors.Join(sorted...)
}

// isFieldError reports whether err is a *FieldError itself (not one wrapped in more
// words, which would be lost), setting *fe.
func isFieldError(err error, fe **FieldError) bool {
	e, ok := err.(*FieldError)
	if ok {
		*fe = e
	}
	return ok
}

// flatten appends the errors joined in err (errors.Join, nested), or err itself.
func flatten(err error, out []error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if e != nil {
				out = flatten(e, out)
			}
		}
		return out
	}
	return append(out, err)
}

// lineOf is the line of the key at the dotted path field, or of the nearest enclosing
// key the file has; 0 when none is there.
func lineOf(lines map[string]int, field string) int {
	for p := field; p != ""; p = parentPath(p) {
		if l, ok := lines[p]; ok {
			return l
		}
	}
	return 0
}

// parentPath is the path one level up: "a.b[1]" → "a.b", "a.b" → "a", "a" → "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}
