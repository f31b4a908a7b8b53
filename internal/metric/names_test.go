package metric

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
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
