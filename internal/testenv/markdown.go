package testenv

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
)

// FencedBlocks returns the fenced code blocks of file's section heading (a whole heading
// line, e.g. "## Install" or "### Many machines") whose info string is lang ("sh"; "" for
// a bare fence), in order. The section runs to the next heading of the same or a higher
// level; its subsections belong to it. The test fails when the heading is missing.
func FencedBlocks(t testing.TB, file, heading, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	level := headingLevel(heading)
	var blocks []string
	var cur strings.Builder
	found, in, fenced, keep := false, false, false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case fenced && line == "```":
			fenced = false
			if keep {
				blocks = append(blocks, cur.String())
			}
		case fenced:
			if keep {
				cur.WriteString(line + "\n")
			}
		case strings.HasPrefix(line, "```"):
			fenced, keep = true, in && strings.TrimPrefix(line, "```") == lang
			cur.Reset()
		case headingLevel(line) > 0:
			if line == heading {
				in, found = true, true
			} else if headingLevel(line) <= level {
				in = false
			}
		}
	}
	if !found {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	return blocks
}

// headingLevel is the level of a Markdown heading line ("## x" is 2), 0 for another line.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || !strings.HasPrefix(line[n:], " ") {
		return 0
	}
	return n
}

// ShellCommands returns the commands of the ```sh blocks of file's section heading, one
// per line: continuation lines joined, comments (from " #") and blank lines dropped. The
// test fails when the section has none.
func ShellCommands(t testing.TB, file, heading string) []string {
	t.Helper()
	var cmds []string
	for _, block := range FencedBlocks(t, file, heading, "sh") {
		cont := ""
		for _, line := range strings.Split(block, "\n") {
			line = cont + line
			cont = ""
			if strings.HasSuffix(line, "\\") {
				cont = strings.TrimSuffix(line, "\\") + " "
				continue
			}
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				cmds = append(cmds, line)
			}
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("%s has no sh blocks under %q", file, heading)
	}
	return cmds
}
