package config

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzUnknownKeys: unknownKeys, which a Plugins section uses since Node.Decode cannot
// refuse unknown keys, finds the keys the decoder's KnownFields finds, on the same
// document and type.
func FuzzUnknownKeys(f *testing.F) {
	for _, s := range []string{
		"name: a\nnmae: b\n",
		"limits: {max: 1, mx: 2}\ntargets: [{addr: a}, {adr: b}]\nroutes: {r: {to: a, too: b}}\n",
		"a: &a {name: x, bogus: 1}\n",
		"<<: {name: x, bogus: 1}\ntags: [a]\n",
		"<<: [{bogus: 1}, {name: 2}]\n",
		"limits: 5\ntargets: {addr: a}\n",
		"routes:\n  r: &r {to: a, x: 1}\n  s: *r\n",
		"hidden: 1\nevery: [1]\n",
		"<<: {s}\ns:",            // a key the mapping sets is not taken from the merge
		"&0: ",                   // a null key is skipped
		"targets: [{adr},{adr}]", // one key twice on a line
		"<<: {0}\n0:",            // a mapping's key that is not a string does not hide the merge's
		"<<: {\"0\"}\n0:",
		"<<: {0}\n\"0\":",
	} {
		f.Add([]byte(s))
	}
	t := reflect.TypeFor[alphaConfig]()
	f.Fuzz(func(tt *testing.T, data []byte) {
		var root yaml.Node
		if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
			return
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		var te *yaml.TypeError
		var decoder []string
		if err := dec.Decode(new(alphaConfig)); err != nil {
			if !errors.As(err, &te) {
				return // a document the decoder gives up on
			}
			for _, e := range te.Errors {
				if strings.Contains(e, "already defined") {
					return // the decoder skips a mapping with a duplicate key
				}
				if strings.Contains(e, " not found in type ") {
					decoder = append(decoder, e)
				}
			}
		}
		// The same key can be reported more than once (an alias, two list items on one
		// line): compare the lines and keys.
		ours := unknownKeys(root.Content[0], t)
		slices.Sort(decoder)
		decoder = slices.Compact(decoder)
		slices.Sort(ours)
		ours = slices.Compact(ours)
		if !slices.Equal(decoder, ours) {
			tt.Fatalf("the decoder finds\n%q\nunknownKeys\n%q", decoder, ours)
		}
	})
}
