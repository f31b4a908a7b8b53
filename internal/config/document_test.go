package config

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// listFile is a file whose entries are decoded one at a time.
type listFile struct {
	Owner   string        `yaml:"owner"`
	Entries []alphaConfig `yaml:"entries"`
}

// TestDocumentDecodesEachPartOnItsOwn: the top level, its entries kept as nodes, then
// each entry: an entry's unknown key and wrong type are reported as Decode reports them
// (the full dotted path from the top, the known keys there, the file's order), the
// entry holds what did decode, and the next entry is decoded all the same.
func TestDocumentDecodesEachPartOnItsOwn(t *testing.T) {
	src := `owner: ops
ownr: typo
entries:
  - name: first
    nmae: typo
    limits: {max: 2.5}
    tags: [a]
  - name: second
    every: soon
  - name: third
`
	doc, err := ReadDocument(strings.NewReader(src), "list.yaml", (*listFile)(nil))
	if err != nil {
		t.Fatal(err)
	}
	var top struct {
		Owner   string      `yaml:"owner"`
		Entries []yaml.Node `yaml:"entries"`
	}
	// The entries' own keys are not the top level's to check: a yaml.Node is checked
	// when it is decoded in turn.
	assertErrors(t, doc.Decode(doc.Top(), &top),
		`list.yaml:2: unknown key "ownr" (at the top level: owner, entries)`)
	if top.Owner != "ops" || len(top.Entries) != 3 {
		t.Fatalf("top level decoded as %q and %d entries", top.Owner, len(top.Entries))
	}
	want := [][]string{{
		`list.yaml:5: unknown key "entries[0].nmae" (under entries[0]: name, every, tags, limits, targets, routes)`,
		`list.yaml:6: field "entries[0].limits.max": number "2.5" where an integer belongs`,
	}, {
		`list.yaml:9: field "entries[1].every": invalid duration "soon"`,
	}, nil}
	names := []string{"first", "second", "third"}
	for i := range top.Entries {
		var e alphaConfig
		assertErrors(t, doc.Decode(&top.Entries[i], &e), want[i]...)
		if e.Name != names[i] {
			t.Errorf("entry %d: name %q, want %q: what decoded is kept", i, e.Name, names[i])
		}
	}
}

// assertErrors fails unless err's lines begin with want, in order; nil for none.
func assertErrors(t *testing.T, err error, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("want no error, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want %q, got no error", want)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("want %d errors, got:\n%v", len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d is\n%s\nwant it to begin\n%s", i, lines[i], w)
		}
	}
}
