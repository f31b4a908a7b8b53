package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// The strict checks a section that decodes itself (Plugins) needs, since yaml.Node.Decode
// has no KnownFields. They report in the yaml package's own words, "line N: …", so that
// translate turns them into errors exactly as it does the decoder's.

// unknownField is the decoder's report of a key k that a value of type t has no field for.
func unknownField(k *yaml.Node, t reflect.Type) string {
	return fmt.Sprintf("line %d: field %s not found in type %s", k.Line, k.Value, t)
}

// fieldError reports msg about the key at the dotted path field, relative to the section
// that reports it ("host.mount_ignore"): translate finds the full path on that line.
func fieldError(line int, field, msg string) string {
	return fmt.Sprintf("line %d: field %s: %s", line, field, msg)
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	// nodeKind is yaml.Node, which the decoder fills with the node itself: its keys are
	// checked when it is decoded in turn (Document.Decode).
	nodeKind = reflect.TypeFor[yaml.Node]()
)

// unknownKeys reports every key below n that a value of type t has no field for, as the
// decoder with KnownFields would, and every number with a fraction given for a whole
// number (which the decoder truncates: "nodata: 2.5" read as 2): through structs, lists,
// maps, aliases and merge keys ("<<"), stopping at types that decode themselves
// (Duration, a nested Plugins) and at a yaml.Node.
func unknownKeys(n *yaml.Node, t reflect.Type) []string {
	c := keyChecker{seen: map[nodeType]bool{}}
	c.check(n, t)
	return c.errs
}

// nodeType is one check: aliases can make a node reachable many times (or from inside
// itself), and checking it again against the same type would find nothing new.
type nodeType struct {
	n *yaml.Node
	t reflect.Type
}

type keyChecker struct {
	seen map[nodeType]bool
	errs []string
}

func (c *keyChecker) check(n *yaml.Node, t reflect.Type) {
	n = resolve(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || t == nodeKind || c.seen[nodeType{n, t}] {
		return
	}
	c.seen[nodeType{n, t}] = true
	switch {
	case n.Kind == yaml.ScalarNode && isWhole(t.Kind()) && n.ShortTag() == "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f != math.Trunc(f) {
			// In the decoder's words, so that translate says it as it says its own.
			c.errs = append(c.errs, fmt.Sprintf("line %d: cannot unmarshal !!float `%s` into %s", n.Line, n.Value, t))
		}
	case n.Kind == yaml.MappingNode && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		c.mapping(n, t, nil, map[*yaml.Node]bool{})
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for _, e := range n.Content {
			c.check(e, t.Elem())
		}
	}
}

// mapping checks the keys of n, a mapping decoded into t, then those of the mappings it
// merges ("<<"), as the decoder does: a merged key is skipped when the mapping, or an
// earlier merge, set it (done, nil for the mapping itself); merging holds the mappings
// merged so far, each checked once.
func (c *keyChecker) mapping(n *yaml.Node, t reflect.Type, done map[string]bool, merging map[*yaml.Node]bool) {
	merged := done != nil
	if !merged {
		done = map[string]bool{}
	}
	var merge *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		switch {
		case isMergeKey(k):
			merge = v // the last one, as the decoder
		case k.Kind != yaml.ScalarNode || isNull(k):
			// A struct has no such key: the decoder refuses a list or a mapping and
			// skips a null; a map's values are checked whatever their keys.
			if t.Kind() == reflect.Map {
				c.check(v, t.Elem())
			}
		case merged && done[k.Value]:
		default:
			// yaml.v3 skips a merged key the mapping sets only when the mapping's key is a
			// string (it records the mapping's keys as decoded, 0 an int, and looks the
			// merged ones up by their text); keys of the merges shadow later ones as text.
			if merged || k.ShortTag() == "!!str" {
				done[k.Value] = true
			}
			if t.Kind() == reflect.Map {
				c.check(v, t.Elem())
			} else {
				c.field(k, v, t)
			}
		}
	}
	if merge == nil {
		return
	}
	sources := []*yaml.Node{resolve(merge)}
	if sources[0].Kind == yaml.SequenceNode {
		sources = sources[0].Content
	}
	for _, m := range sources {
		if m = resolve(m); m.Kind == yaml.MappingNode && !merging[m] {
			merging[m] = true
			c.mapping(m, t, done, merging)
		}
	}
}

// field checks the value v of the key k in a mapping decoded into the struct type t.
func (c *keyChecker) field(k, v *yaml.Node, t reflect.Type) {
	if f, ok := fieldByKey(t, k.Value); ok {
		c.check(v, f.Type)
	} else if elem := inlineMapElem(t); elem != nil {
		c.check(v, elem)
	} else {
		c.errs = append(c.errs, unknownField(k, t))
	}
}

// isWhole reports whether k is a kind of whole number.
func isWhole(k reflect.Kind) bool {
	return reflect.Int <= k && k <= reflect.Uintptr
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}
