// Command testreport reads `go test -json` on stdin, or from each file named (several
// go test runs side by side, through pipes), and prints what `make test` shows: a line
// per package as it ends (ok, FAIL, or no tests), the whole output of every test that
// failed and of every package that failed outside a test (a build error, a panic, a
// timeout), then the ten slowest tests and packages of all the runs, and last what each
// failed test said at its file:line (its t.Error and t.Log lines): a failed integration
// test's output ends with pages of its processes' logs, and a reader who sees only the
// end of the run still sees why. It exits 1 when anything failed, so that a pipe from go
// test keeps the verdict.
//
//	go test -json ./... | go run ./internal/testenv/testreport [-slowest 10]
//	testreport <(go test -json ./a/...) <(go test -json ./b/...)
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is a finished test or package and how long it took.
type timing struct {
	name    string
	elapsed float64
}

type report struct {
	out      io.Writer
	output   map[string][]string // "pkg test" → its output so far, dropped when it passes
	tests    []timing
	packages []timing
	failed   []string
	said     []string // the file:line lines of the failed tests, in the order they failed
	skipped  int
	passed   int
	// failedTests and failedPackages count what failed (failed lists both).
	failedTests, failedPackages int
}

func main() {
	slowest := flag.Int("slowest", 10, "how many of the slowest tests and packages to list")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go test -json ./... | testreport [-slowest N]\n       testreport [-slowest N] FILE...  (each a go test -json stream, read side by side)")
		flag.PrintDefaults()
	}
	flag.Parse()
	ins := []io.Reader{os.Stdin}
	if flag.NArg() > 0 {
		ins = ins[:0]
		for _, name := range flag.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "testreport:", err)
				os.Exit(2)
			}
			defer f.Close()
			ins = append(ins, f)
		}
	}
	r := &report{out: os.Stdout, output: map[string][]string{}}
	if err := r.read(ins...); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r.summary(*slowest)
	if len(r.failed) > 0 {
		os.Exit(1)
	}
}

// line is one line of one input: src keeps the output of two runs of the same package
// (a second pass without -race, say) apart.
type line struct {
	src  int
	text []byte
}

// read takes the lines of every input as they come, one at a time; a line that is not an
// event (go's own messages before the test binary runs, such as a build failure) is
// printed as it is. It returns when every input has ended.
func (r *report) read(ins ...io.Reader) error {
	lines := make(chan line, 64)
	errs := make(chan error, len(ins))
	for i, in := range ins {
		go func() {
			sc := bufio.NewScanner(in)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				lines <- line{i, bytes.Clone(sc.Bytes())}
			}
			errs <- sc.Err()
		}()
	}
	var err error
	for ended := 0; ended < len(ins); {
		select {
		case l := <-lines:
			r.takeLine(l)
		case e := <-errs:
			err = errors.Join(err, e)
			ended++
		}
	}
	for { // what was sent before its reader ended
		select {
		case l := <-lines:
			r.takeLine(l)
		default:
			return err
		}
	}
}

func (r *report) takeLine(l line) {
	var e event
	if len(l.text) == 0 || l.text[0] != '{' || json.Unmarshal(l.text, &e) != nil {
		fmt.Fprintln(r.out, string(l.text))
		return
	}
	r.take(l.src, e)
}

func (r *report) take(src int, e event) {
	key := fmt.Sprint(src, " ", e.Package, " ", e.Test)
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output) // a compile error: shown as go prints it
	case "output":
		r.output[key] = append(r.output[key], e.Output)
	case "pass", "skip", "fail":
		if e.Test == "" {
			r.packageEnded(src, e)
			return
		}
		if e.Action == "fail" {
			// The test's output ends with go's own "--- FAIL: name (time)" line; the
			// package is named before it, as the line does not.
			fmt.Fprintf(r.out, "%s:\n%s", e.Package, strings.Join(r.output[key], ""))
			r.failed = append(r.failed, e.Package+" "+e.Test)
			r.said = append(r.said, testSaid(e.Package+" "+e.Test, r.output[key])...)
			if !strings.Contains(e.Test, "/") {
				r.failedTests++
			}
		}
		if !strings.Contains(e.Test, "/") {
			r.tests = append(r.tests, timing{e.Package + " " + e.Test, e.Elapsed})
			switch e.Action {
			case "pass":
				r.passed++
			case "skip":
				r.skipped++
			}
		}
		delete(r.output, key)
	}
}

// packageEnded prints the package's line, and its own output when it failed outside
// any test.
func (r *report) packageEnded(src int, e event) {
	key := fmt.Sprint(src, " ", e.Package, " ")
	switch e.Action {
	case "fail":
		fmt.Fprintf(r.out, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
		if len(r.output[key]) > 0 {
			fmt.Fprint(r.out, strings.Join(r.output[key], ""))
		}
		r.failed = append(r.failed, e.Package)
		r.failedPackages++
	case "skip":
		fmt.Fprintf(r.out, "?\t%s\t[no test files]\n", e.Package)
	default:
		fmt.Fprintf(r.out, "ok\t%s\t%.1fs\n", e.Package, e.Elapsed)
	}
	if e.Action != "skip" {
		r.packages = append(r.packages, timing{e.Package, e.Elapsed})
	}
	delete(r.output, key)
}

func (r *report) summary(n int) {
	byTime := func(a, b timing) int { return cmp.Or(cmp.Compare(b.elapsed, a.elapsed), cmp.Compare(a.name, b.name)) }
	slices.SortFunc(r.tests, byTime)
	slices.SortFunc(r.packages, byTime)
	fmt.Fprintf(r.out, "\n%d tests passed, %d skipped, %d failed; %d packages failed\n", r.passed, r.skipped, r.failedTests, r.failedPackages)
	fmt.Fprintf(r.out, "the %d slowest tests:\n", min(n, len(r.tests)))
	for _, t := range r.tests[:min(n, len(r.tests))] {
		fmt.Fprintf(r.out, "  %7.1fs  %s\n", t.elapsed, t.name)
	}
	fmt.Fprintf(r.out, "the %d slowest packages:\n", min(n, len(r.packages)))
	for _, p := range r.packages[:min(n, len(r.packages))] {
		fmt.Fprintf(r.out, "  %7.1fs  %s\n", p.elapsed, p.name)
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(r.out, "failed:\n  %s\n", strings.Join(r.failed, "\n  "))
	}
	if len(r.said) > 0 {
		fmt.Fprintf(r.out, "what the failed tests said:\n%s\n", strings.Join(r.said, "\n"))
	}
}

// saidAt is the start of a line written by t.Error, t.Fatal or t.Log: indented, then the
// test file and line.
var saidAt = regexp.MustCompile(`^\s+[\w.-]+_test\.go:\d+: `)

// maxSaid bounds what one failed test adds to the summary: its first lines say why.
const maxSaid = 20

// testSaid is the first line of each message the test wrote at its file:line, but not
// the dumps of its processes' logs (testenv's "last lines of"), as "name: line". A
// message that starts on the next line (testify's, with its "Error Trace" first) is
// given its "Error:" line instead.
func testSaid(name string, output []string) []string {
	var lines []string
	for _, chunk := range output {
		for l := range strings.Lines(chunk) {
			lines = append(lines, l)
		}
	}
	var said []string
	for i, l := range lines {
		if !saidAt.MatchString(l) || strings.Contains(l, ": last lines of ") {
			continue
		}
		if len(said) == maxSaid {
			return append(said, "  "+name+": …")
		}
		msg := strings.TrimSpace(l)
		if strings.HasSuffix(msg, ":") { // the message is on the lines that follow
			for _, next := range lines[i+1 : min(i+8, len(lines))] {
				if _, e, ok := strings.Cut(next, "Error:"); ok {
					msg += " " + strings.Join(strings.Fields(e), " ")
					break
				}
			}
		}
		said = append(said, "  "+name+": "+msg)
	}
	return said
}
