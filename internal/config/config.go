// Package config decodes the per-role YAML files strictly: unknown keys, type mismatches,
// empty files and multi-document files are errors that name the file, the line and the
// field, so a typo in a config never silently falls back to a default.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes bounds a config file; anything larger is certainly not a config and is
// refused before parsing.
const MaxFileBytes = 4 << 20

// ErrEmpty is returned (wrapped) when a file holds no YAML document at all.
var ErrEmpty = errors.New("empty config")

// Validator is implemented by config structs that check themselves after decoding.
type Validator interface {
	Validate() error
}

// Renamer is implemented by configs whose keys were renamed: RenamedKeys maps an old
// dotted key ("coordinator.type", "http_addr") to the key that replaced it. Decode
// refuses a file that still uses an old key, naming the new one, instead of the plain
// "unknown key" an operator upgrading would otherwise get.
type Renamer interface {
	RenamedKeys() map[string]string
}

// Retirer is implemented by configs that dropped keys with no key to rename them to (an
// inline secret, which now lives in a file or a variable): RetiredKeys maps an old
// dotted key to what to do instead. Decode refuses a file that still uses one with that
// message.
//
// In both maps a "*" stands for any one key of a map ("channels.*.bearer_token").
type Retirer interface {
	RetiredKeys() map[string]string
}

// Error is one problem found while decoding a file. Field is the dotted path of the
// offending key ("server.interval", "subscriptions[1].topic") when it can be determined.
type Error struct {
	File  string
	Line  int // 0 when unknown
	Field string
	Msg   string
	// Err is the cause when the problem came as an error (a *FieldError's), for errors.Is.
	Err error
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and strictly decodes the YAML file at path into out (a non-nil pointer), then
// calls out.Validate() if out implements Validator.
func Load(path string, out any) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	return Decode(f, path, out)
}

// Decode strictly decodes exactly one YAML document from r into out (a non-nil pointer).
// name is used in error messages, usually the file path. If out implements Validator,
// Validate is called once the keys and types are right; its *FieldErrors name the line
// of their key (see Locate), its other errors are prefixed with name, and they come with
// the values a Plugins section refused, every one at once, in the file's order.
func Decode(r io.Reader, name string, out any) (err error) {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%s: decode config: out must be a non-nil pointer, got %T", name, out)
	}
	defer recoverParser(name, &err)
	// First pass: structure only. It finds syntax errors, empty files and extra documents,
	// and gives the node tree used to name fields in type errors.
	data, root, err := readOne(r, name)
	if err != nil {
		return err
	}

	// Old keys are reported with the unknown keys and wrong types below: all of a file's
	// key problems in one run.
	renamed := checkRenamed(root, name, out)

	// Second pass: the strict decode. Node.Decode cannot reject unknown fields, so decode
	// the bytes again with KnownFields. The keys and types come first: the values of a
	// file with a wrong type are not checked, as what did not decode leaves a default in
	// the place of what the file meant. Where only keys are unknown, every other key
	// decoded, and its values are checked too, after the keys (`--check` promises every
	// problem at once: two outside trials saw a value's error only once a stray key was
	// gone).
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// The values a Plugins section refused as it decoded itself: reported with the
	// others once the keys are right.
	var values error
	if err := dec.Decode(out); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) || !valuesOnly(te) {
			keys := translate(err, name, data, root, out)
			if te != nil && keysOnly(te) {
				if verr := validate(out); verr != nil {
					keys = errors.Join(keys, locate(name, root, verr))
				}
			}
			return withRenamed(name, root, renamed, keys)
		}
		values = translate(err, name, data, root, out)
	}
	// The decoder truncates a fraction given for a whole number (2.5 read as 2): the
	// walk that checks the sections decoding themselves finds those too.
	if errs := unknownKeys(root.Content[0], rv.Type()); len(errs) > 0 {
		keys := errors.Join(values, translate(&yaml.TypeError{Errors: errs}, name, data, root, out))
		if keysOnly(&yaml.TypeError{Errors: errs}) {
			keys = errors.Join(keys, validate(out))
		}
		return withRenamed(name, root, renamed, locate(name, root, keys))
	}
	if renamed != nil {
		return renamed
	}
	// Every value refused, at once, in the file's order.
	values = errors.Join(values, validate(out))
	if values == nil {
		return nil
	}
	return locate(name, root, values)
}

// withRenamed joins keys, the errors of a file's keys and types, with renamed, those of
// its old keys (checkRenamed), in the file's order; an old key is not also reported as
// unknown.
func withRenamed(name string, root *yaml.Node, renamed, keys error) error {
	if renamed == nil {
		return keys
	}
	old := map[int]bool{}
	all := flatten(renamed, nil)
	for _, e := range all {
		var ce *Error
		if errors.As(e, &ce) {
			old[ce.Line] = true
		}
	}
	for _, e := range flatten(keys, nil) {
		var ce *Error
		if errors.As(e, &ce) && old[ce.Line] {
			continue
		}
		all = append(all, e)
	}
	return locate(name, root, errors.Join(all...))
}

// validate is out's Validate, when it has one.
func validate(out any) error {
	if v, ok := out.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// keysOnly reports whether every error of te is an unknown key: everything else in the
// document decoded, and its values can be checked.
func keysOnly(te *yaml.TypeError) bool {
	for _, s := range te.Errors {
		m := reLine.FindStringSubmatch(s)
		if m == nil || !reUnknown.MatchString(m[2]) {
			return false
		}
	}
	return len(te.Errors) > 0
}

// valuesOnly reports whether every error of te is a value a Plugins section refused
// (validatePlugin), in the words translate reads: no unknown key, no type mismatch.
func valuesOnly(te *yaml.TypeError) bool {
	for _, s := range te.Errors {
		m := reLine.FindStringSubmatch(s)
		if m == nil || reUnknown.MatchString(m[2]) || !reField.MatchString(m[2]) {
			return false
		}
	}
	return len(te.Errors) > 0
}

// checkRenamed reports every key of the document, in the file's order, that out (a
// Renamer, a Retirer) lists as an old key.
func checkRenamed(root *yaml.Node, name string, out any) error {
	msgs := map[string]string{}
	if r, ok := out.(Renamer); ok {
		for from, to := range r.RenamedKeys() {
			// %s: the new key, its "*" filled by oldKey with the file's keys.
			msgs[from] = "this key is now %q: rename it\x00" + to
		}
	}
	if r, ok := out.(Retirer); ok {
		maps.Copy(msgs, r.RetiredKeys())
	}
	if len(msgs) == 0 {
		return nil
	}
	paths := map[int][]entry{}
	collectPaths(root, "", paths)
	lines := make([]int, 0, len(paths))
	for line := range paths {
		lines = append(lines, line)
	}
	slices.Sort(lines)
	// Every old key at once: an upgrade's config is fixed in one pass, not one start each.
	var errs []error
	for _, line := range lines {
		for _, e := range paths[line] {
			if e.kind != "key" {
				continue
			}
			if msg, ok := oldKey(msgs, reIndex.ReplaceAllString(e.path, "")); ok {
				errs = append(errs, &Error{File: name, Line: line, Field: e.path, Msg: msg})
			}
		}
	}
	return errors.Join(errs...)
}

// oldKey finds the message of the dotted path p in msgs, whose keys may hold "*" for
// any one element. A rename's message is its format and new key, split by a NUL; the
// new key's "*" are filled with the elements of p they stand for.
func oldKey(msgs map[string]string, p string) (string, bool) {
	parts := strings.Split(p, ".")
	var stars []string
	msg, ok := msgs[p]
	for pattern, m := range msgs {
		if ok {
			break
		}
		want := strings.Split(pattern, ".")
		if !strings.Contains(pattern, "*") || len(want) != len(parts) {
			continue
		}
		stars = stars[:0]
		ok = true
		for i := range want {
			switch want[i] {
			case "*":
				stars = append(stars, parts[i])
			case parts[i]:
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			msg = m
		}
	}
	if !ok {
		return "", false
	}
	format, to, rename := strings.Cut(msg, "\x00")
	if !rename {
		return msg, true
	}
	for _, s := range stars {
		to = strings.Replace(to, "*", s, 1)
	}
	return fmt.Sprintf(format, to), true
}

// readOne reads a file of at most MaxFileBytes from r and parses it (parseOne).
func readOne(r io.Reader, name string) ([]byte, *yaml.Node, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: read config: %w", name, err)
	}
	if len(data) > MaxFileBytes {
		return nil, nil, fmt.Errorf("%s: config larger than %d bytes", name, MaxFileBytes)
	}
	root, err := parseOne(data, name)
	return data, root, err
}

// recoverParser, deferred, turns a panic of the yaml package into *err. The package
// reports most problems by panicking internally and recovering; anything it does not
// recover is a bug in it, and a config file must never crash a process.
func recoverParser(name string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: malformed YAML (parser panic: %v)", name, p)
	}
}

// parseOne parses data into a node tree and insists on exactly one non-null document.
func parseOne(data []byte, name string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w: no YAML document", name, ErrEmpty)
		}
		return nil, translate(err, name, data, nil, nil)
	}
	if isNull(&root) {
		return nil, fmt.Errorf("%s: %w: the document is null", name, ErrEmpty)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return &root, nil
	case err != nil:
		return nil, translate(err, name, data, nil, nil)
	default:
		return nil, &Error{File: name, Line: extra.Line, Msg: "a second YAML document (\"---\") is not allowed: one file holds one config"}
	}
}

func isNull(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return true
		}
		n = n.Content[0]
	}
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

var (
	reSyntax = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	reLine   = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)
	// An unknown key (.* since a key may be ""), from the decoder or a Plugins section.
	reUnknown = regexp.MustCompile(`^field (.*) not found in type (.+)$`)
	// An error about the key a section names (fieldError).
	reField = regexp.MustCompile(`(?s)^field (\S+): (.*)$`)
	reType  = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
)

// translate turns the yaml package's errors ("yaml: unmarshal errors:\n  line 7: field x
// not found in type T") into *Error values naming file, line and field, joined with
// errors.Join when there are several.
func translate(err error, name string, data []byte, root *yaml.Node, out any) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := err.Error()
		if m := reSyntax.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			if at := syntaxLine(data, m[2]); at > 0 {
				line = at
			}
			e := &Error{File: name, Line: line, Msg: m[2]}
			if strings.Contains(e.Msg, "cannot start any token") && lineHasTab(data, line) {
				e.Msg += " (tabs are not allowed in YAML indentation)"
			}
			return e
		}
		return &Error{File: name, Msg: strings.TrimPrefix(msg, "yaml: ")}
	}
	paths := map[int][]entry{}
	if root != nil {
		collectPaths(root, "", paths)
	}
	errs := make([]error, 0, len(te.Errors))
	for _, s := range te.Errors {
		e := &Error{File: name, Msg: s}
		if m := reLine.FindStringSubmatch(s); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		if m := reUnknown.FindStringSubmatch(e.Msg); m != nil {
			e.Msg = unknownMsg(findKey(paths[e.Line], m[1]), out)
		} else if m := reField.FindStringSubmatch(e.Msg); m != nil {
			// A section that decodes itself (Plugins) names the key below it.
			e.Field, e.Msg = findKey(paths[e.Line], m[1]), m[2]
		} else {
			// Type mismatches and errors from our own UnmarshalYAML methods (Duration) are
			// about the value on that line; the tag says which kind of node it is.
			kind := "scalar"
			if m := reType.FindStringSubmatch(e.Msg); m != nil {
				e.Msg = typeMsg(m[1], m[2], m[3])
				if m[1] == "map" || m[1] == "seq" {
					kind = m[1]
				}
			}
			e.Field = find(paths[e.Line], kind, "")
			if e.Field == "" && kind == "scalar" {
				e.Field = findByValue(paths[e.Line], s)
			}
		}
		errs = append(errs, e)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// findKey is the full dotted path of the key on a line whose path ends with key, or key
// itself when the line does not tell.
func findKey(entries []entry, key string) string {
	if p := find(entries, "key", key); p != "" {
		return p
	}
	return key
}

// syntaxLine is the line of a YAML syntax error whose message is msg: the first line
// at which the file, read up to it, fails with that message; 0 when none does. yaml.v3
// names another line for many: where the block around the problem starts (an
// indentation error in a config that opens with comments was said to be at its first
// key), the line before a tab, or one too early for a parser error, which it counts
// from 0 (an unclosed brace on line 5 was said to be on line 4, a blank one).
func syntaxLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	end := 0
	for i, l := range lines {
		end += len(l)
		var n yaml.Node
		err := yaml.Unmarshal(data[:end], &n)
		if err == nil {
			continue
		}
		if m := reSyntax.FindStringSubmatch(err.Error()); m != nil && m[2] == msg {
			return i + 1
		}
	}
	return 0
}

func lineHasTab(data []byte, line int) bool {
	lines := bytes.Split(data, []byte("\n"))
	return line >= 1 && line <= len(lines) && bytes.ContainsRune(lines[line-1], '\t')
}

// unknownMsg says that the key at the dotted path field is not one the config knows,
// and which keys it knows there (read from out's yaml tags), never a Go type.
func unknownMsg(field string, out any) string {
	msg := fmt.Sprintf("unknown key %q", field)
	parent := ""
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		parent = field[:i]
	}
	if out == nil {
		return msg
	}
	if keys := knownKeys(reflect.TypeOf(out), parent); len(keys) > 0 {
		where := "at the top level"
		if parent != "" {
			where = "under " + parent
		}
		msg += fmt.Sprintf(" (%s: %s)", where, strings.Join(keys, ", "))
	}
	return msg
}

// reIndex strips list indexes from a dotted path ("subscriptions[1].topic").
var reIndex = regexp.MustCompile(`\[\d+\]`)

// yamlKind names what YAML must hold to decode into the Go type the yaml package names
// ("int", "[]string", "config.Duration", "map[string]string"), in YAML's words.
func yamlKind(into string) string {
	switch {
	case strings.HasPrefix(into, "[]"):
		return "a list"
	case strings.HasPrefix(into, "map["):
		return "a mapping"
	case strings.HasPrefix(into, "uint"):
		// server_id: -5 said `integer "-5" where an integer belongs`.
		if bits, err := strconv.Atoi(strings.TrimPrefix(into, "uint")); err == nil && bits < 64 {
			return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<bits-1)
		}
		return "an integer of 0 or more"
	case strings.HasPrefix(into, "int"):
		return "an integer"
	case strings.HasPrefix(into, "float"):
		return "a number"
	case into == "bool":
		return "true or false"
	case into == "string", into == "config.Secret":
		return "a string"
	case into == "config.Duration", into == "time.Duration":
		return "a duration"
	}
	return "a mapping" // a struct
}

func typeMsg(tag, value, into string) string {
	kinds := map[string]string{
		"str": "string", "int": "integer", "float": "number", "bool": "boolean",
		"map": "mapping", "seq": "list", "null": "null", "timestamp": "timestamp", "binary": "binary",
	}
	kind := kinds[tag]
	if kind == "" {
		kind = "!!" + tag
	}
	into, hint, _ := strings.Cut(into, " (") // our own UnmarshalYAML adds a hint: "(want e.g. …)"
	if hint != "" {
		hint = " (" + hint
	}
	if value == "" {
		return fmt.Sprintf("a %s where %s belongs%s", kind, yamlKind(into), hint)
	}
	// A value in the wrong place (brokers: kafka:pw@host:9092, a string for a list) is
	// still a value: no password in it is shown. yaml shortens a long one to its first 7
	// bytes and "...", which may have cut the '@' off a password's start (kafka:S...):
	// a shortened value is shown up to its first ':'.
	value = Redact(value)
	if short, ok := strings.CutSuffix(value, "..."); ok {
		if i := strings.IndexByte(short, ':'); i >= 0 {
			value = short[:i+1] + "..."
		}
	}
	return fmt.Sprintf("%s %q where %s belongs%s", kind, value, yamlKind(into), hint)
}

// entry is one node of the document that an error on its line may be about.
type entry struct {
	path  string
	kind  string // "key", "scalar", "map" or "seq"
	value string // a scalar's
}

// collectPaths records, per line, the dotted paths of the keys and values that start there,
// so that the yaml package's line-only errors can name the field.
func collectPaths(n *yaml.Node, prefix string, out map[int][]entry) {
	add := func(line int, p, kind, value string) {
		for _, e := range out[line] {
			if e.path == p && e.kind == kind {
				return
			}
		}
		out[line] = append(out[line], entry{p, kind, value})
	}
	value := func(v *yaml.Node, p string) {
		switch v.Kind {
		case yaml.MappingNode:
			add(v.Line, p, "map", "")
			collectPaths(v, p, out)
		case yaml.SequenceNode:
			add(v.Line, p, "seq", "")
			collectPaths(v, p, out)
		default:
			add(v.Line, p, "scalar", v.Value)
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			collectPaths(c, prefix, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			add(k.Line, p, "key", "")
			value(v, p)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			value(c, fmt.Sprintf("%s[%d]", prefix, i))
		}
	}
}

// find returns the only path on a line whose node kind is kind (and, if key is set, whose
// last element is key), or "" when there is none or the line is ambiguous.
// findByValue is the path of the one scalar on a line whose value msg, an error about
// that line, quotes: as the yaml package does (`v`, or its first 7 bytes and "..."), or
// as our own UnmarshalYAML methods do ("v"). A line of several values (a flow mapping:
// `- {name: a, for: abc}`) then still names the field. "" when no one scalar matches.
func findByValue(entries []entry, msg string) string {
	found := ""
	for _, e := range entries {
		if e.kind != "scalar" || !quotes(msg, e.value) {
			continue
		}
		if found != "" && found != e.path {
			return ""
		}
		found = e.path
	}
	return found
}

// quotes reports whether msg quotes v whole, or shortened as the yaml package shortens it.
func quotes(msg, v string) bool {
	if strings.Contains(msg, "`"+v+"`") || strings.Contains(msg, strconv.Quote(v)) {
		return true
	}
	return len(v) > 10 && strings.Contains(msg, "`"+v[:7]+"...`")
}

func find(entries []entry, kind, key string) string {
	found := ""
	for _, e := range entries {
		if e.kind != kind {
			continue
		}
		if key != "" && e.path != key && !strings.HasSuffix(e.path, "."+key) {
			continue
		}
		if found != "" && found != e.path {
			return ""
		}
		found = e.path
	}
	return found
}
