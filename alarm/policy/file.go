package policy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/binlake/binlake/internal/config"
)

// ChannelSet is the channels the policies may name: the alarm's config's. In names
// where they are configured (the config file's path) in the error about a channel it
// lacks.
type ChannelSet struct {
	Has func(channel string) bool
	In  string
}

// Load reads and validates a policy file (Parse).
func Load(path string) ([]*Policy, error) { return LoadWith(path, nil) }

// LoadWith reads and validates a policy file, and checks the channels its policies
// name against channels (ParseWith).
func LoadWith(path string, channels *ChannelSet) ([]*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load policies: %w", err)
	}
	defer f.Close()
	return ParseWith(f, path, channels)
}

// maxPolicies bounds a file: far more than anyone writes by hand, and each policy costs
// work on every point of its metric.
const maxPolicies = 10_000

// Parse strictly decodes and validates a policy file; name is used in errors.
func Parse(r io.Reader, name string) ([]*Policy, error) { return ParseWith(r, name, nil) }

// ParseWith strictly decodes and validates a policy file, name being used in errors,
// and, with channels, checks that every channel a policy names is one of them. With an
// error, the policies are those without a problem of their own: for warnings only.
//
// One run reports every problem it can find, in the file's order, each naming the file,
// its line and the field: an operator fixing a file sees them all at once, not a stage
// a run. Each policy is decoded on its own, so that one's unknown key or wrong type
// hides nothing of the others; the values of every policy that decoded are checked (a
// policy that did not is said to be left unchecked: with a key misspelt, its values are
// not what the file meant); the channels of every policy are checked, as far as its
// channel list decoded.
func ParseWith(r io.Reader, name string, channels *ChannelSet) ([]*Policy, error) {
	doc, err := config.ReadDocument(r, name, (*File)(nil))
	if err != nil {
		return nil, err
	}
	// The top level first, each policy kept as its node: an unknown key beside
	// "policies" is reported with the policies' problems.
	var top struct {
		Policies []yaml.Node `yaml:"policies"`
	}
	errs := []error{doc.Decode(doc.Top(), &top)}
	switch {
	case len(top.Policies) == 0:
		errs = append(errs, &config.Error{File: name, Field: "policies", Msg: "no policies: want a list under \"policies:\""})
		return nil, doc.Locate(errors.Join(errs...))
	case len(top.Policies) > maxPolicies:
		return nil, &config.Error{File: name, Field: "policies", Msg: fmt.Sprintf("%d policies, at most %d", len(top.Policies), maxPolicies)}
	}
	out := make([]*Policy, 0, len(top.Policies))
	seen := map[string]int{}
	for i := range top.Policies {
		n := &top.Policies[i]
		field := func(f string) string { return fmt.Sprintf("policies[%d].%s", i, f) }
		var raw Raw
		decodeErr := doc.Decode(n, &raw)
		errs = append(errs, decodeErr)
		j, dup := seen[raw.Name]
		if dup = dup && raw.Name != ""; dup {
			errs = append(errs, config.Bad(field("name"), "duplicate policy name %q (also policies[%d])", raw.Name, j))
		} else {
			seen[raw.Name] = i
		}
		p, fieldErrs := compile(raw)
		if decodeErr != nil {
			// The values that decoded are checked all the same, each where the file sets
			// it: a key misspelt or mistyped leaves its field empty, and what is said of
			// an empty field (missing, or needed by another) waits until it is right.
			wrong := decodedWrong(decodeErr, i)
			for _, fe := range fieldErrs {
				if top, _, _ := strings.Cut(fe.field, "."); hasKey(n, top) && !wrong[top] {
					errs = append(errs, &config.FieldError{Field: field(fe.field), Err: fe.err})
				}
			}
			// Said after the problems that cause it, at the line of the last.
			errs = append(errs, &config.Error{File: name, Line: lastLine(decodeErr, nodeLine(n)), Field: fmt.Sprintf("policies[%d]", i),
				Msg: fmt.Sprintf("policy %s: what depends on the keys and types above is checked once they are right", policyLabel(raw, i))})
		} else {
			for _, fe := range fieldErrs {
				errs = append(errs, &config.FieldError{Field: field(fe.field), Err: fe.err})
			}
		}
		var chanErrs []error
		if channels != nil {
			chanErrs = unconfigured(raw, i, keyLine(n, "channels"), name, channels)
			errs = append(errs, chanErrs...)
		}
		if p != nil && decodeErr == nil && len(fieldErrs) == 0 && !dup && len(chanErrs) == 0 {
			p.Line, p.MetricLine = nodeLine(n), keyLine(n, "metric")
			out = append(out, p)
		}
	}
	// On errors, the policies that decoded and checked clean come back beside them: what
	// is said of those (a metric nothing sends) belongs in the same run.
	return out, doc.Locate(errors.Join(errs...))
}

// unconfigured reports each channel the raw policy i names (at line) that channels
// lacks; each once, however often the policy lists it.
func unconfigured(raw Raw, i, line int, file string, channels *ChannelSet) []error {
	var errs []error
	for j, c := range raw.Channels {
		if c == "" || slices.Contains(raw.Channels[:j], c) || channels.Has(c) {
			continue
		}
		errs = append(errs, &config.Error{File: file, Line: line,
			Msg: fmt.Sprintf("policy %s names channel %q, which %s does not configure", policyLabel(raw, i), c, channels.In)})
	}
	return errs
}

// decodedWrong is the keys of policy i that decodeErr (Document.Decode's) says are
// unknown or of the wrong type, by their first name under the policy.
func decodedWrong(decodeErr error, i int) map[string]bool {
	all := []error{decodeErr}
	if j, ok := decodeErr.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	}
	prefix := fmt.Sprintf("policies[%d].", i)
	wrong := map[string]bool{}
	for _, err := range all {
		var e *config.Error
		if errors.As(err, &e) {
			if rest, ok := strings.CutPrefix(e.Field, prefix); ok {
				top, _, _ := strings.Cut(rest, ".")
				wrong[top] = true
			}
		}
	}
	return wrong
}

// hasKey says whether the policy's mapping n sets key.
func hasKey(n *yaml.Node, key string) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// lastLine is the line of the last problem of err, as Document.Decode returns them (in
// the file's order), or else fallback.
func lastLine(err error, fallback int) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all := j.Unwrap()
		err = all[len(all)-1]
	}
	var e *config.Error
	if errors.As(err, &e) && e.Line > 0 {
		return e.Line
	}
	return fallback
}

// policyLabel names the raw policy i in messages: its name, quoted, or its place in the
// list when it has none.
func policyLabel(raw Raw, i int) string {
	if raw.Name == "" {
		return fmt.Sprintf("policies[%d]", i)
	}
	return fmt.Sprintf("%q", raw.Name)
}

// nodeLine is the line a policy's node starts at, through an alias.
func nodeLine(n *yaml.Node) int {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Line
}

// keyLine is the line of key in the policy's mapping n, or the policy's first line
// when it has no such key.
func keyLine(n *yaml.Node, key string) int {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}
