package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestShellCommandsSection(t *testing.T) {
	md := "# Top\n## A\n```sh\nbefore\n```\n## Try\n```sh\none # comment\n# only a comment\n\ntwo \\\n  continued\n```\n" +
		"```\nbanner\n```\n### Sub\n```yaml\nkey: v\n```\n```sh\nthree\n```\n## Next\n```sh\nafter\n```\n"
	file := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(file, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	// A continuation keeps its indentation: the callers split words on blanks.
	if got, want := ShellCommands(t, file, "## Try"), []string{"one", "two    continued", "three"}; !slices.Equal(got, want) {
		t.Errorf("## Try: %q, want %q", got, want)
	}
	if got, want := ShellCommands(t, file, "### Sub"), []string{"three"}; !slices.Equal(got, want) {
		t.Errorf("### Sub: %q, want %q", got, want)
	}
	if got, want := FencedBlocks(t, file, "## Try", ""), []string{"banner\n"}; !slices.Equal(got, want) {
		t.Errorf("bare blocks: %q, want %q", got, want)
	}
}
