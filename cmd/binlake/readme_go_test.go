//go:build !agentonly

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README says which Go it needs where it first asks for Go (the "Try it" section,
// before its first command), not only under Requirements at the end; the version is
// go.mod's.
func TestReadmeSaysGoVersionFirst(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	want := "Go " + string(m[1])
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	first := regexp.MustCompile(`\bGo\b`).FindStringIndex(readme[strings.Index(readme, readmeOneMachine):])
	if first == nil {
		t.Fatalf("README.md, %s: no Go", readmeOneMachine)
	}
	at := strings.Index(readme, readmeOneMachine) + first[0]
	if !strings.HasPrefix(readme[at:], want) {
		t.Fatalf("README.md, %s: the first Go is %q, want %q", readmeOneMachine, readme[at:at+40], want)
	}
}
