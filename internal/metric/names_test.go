package metric

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// CanonicalNames lists every canonical name constant of metric.go, each once: a constant
// added there and left out would make `binlake alarm --check` warn about policies on it.
func TestCanonicalNamesListsEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "metric.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				name, _ := strconv.Unquote(lit.Value)
				if name != Topic {
					consts = append(consts, name)
				}
			}
		}
	}
	slices.Sort(consts)
	got := CanonicalNames()
	slices.Sort(got)
	if !slices.Equal(got, consts) {
		t.Fatalf("CanonicalNames() = %v\nconstants of metric.go = %v", got, consts)
	}
	for _, n := range got {
		if !ValidName(n) {
			t.Errorf("%q is not a valid metric name", n)
		}
	}
}

// docs/design.md's "Canonical names" lists every canonical name, and only those: it
// once lacked cpu.cores, load.15 and wave.cluster_utilisation, which a default policy
// watches.
func TestDesignListsTheCanonicalNames(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "Canonical names: ")
	if start < 0 {
		t.Fatal("docs/design.md has no \"Canonical names: \" paragraph")
	}
	para := text[start:]
	para = para[:strings.Index(para, "\n\n")]
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9_.]+)`").FindAllStringSubmatch(para, -1) {
		if ValidName(m[1]) && strings.Contains(m[1], ".") {
			listed[m[1]] = true
		}
	}
	for _, n := range CanonicalNames() {
		if !listed[n] {
			t.Errorf("docs/design.md's canonical names lack %s", n)
		}
		delete(listed, n)
	}
	for n := range listed {
		t.Errorf("docs/design.md lists %s, which is not a canonical name", n)
	}
}
