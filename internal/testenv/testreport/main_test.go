package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestReport: a stream with a passing package, a failing test (its output shown, the
// passing test's not), a package that fails outside any test (a panic) and one without
// tests gives their lines, the failures' output, the slowest first, and the failures.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"a"}`,
		`{"Action":"run","Package":"a","Test":"TestFast"}`,
		`{"Action":"output","Package":"a","Test":"TestFast","Output":"quiet\n"}`,
		`{"Action":"pass","Package":"a","Test":"TestFast","Elapsed":0.5}`,
		`{"Action":"run","Package":"a","Test":"TestSlow"}`,
		`{"Action":"output","Package":"a","Test":"TestSlow/sub","Output":"sub says\n"}`,
		`{"Action":"pass","Package":"a","Test":"TestSlow/sub","Elapsed":40}`,
		`{"Action":"output","Package":"a","Test":"TestSlow","Output":"want 3, got 2\n"}`,
		`{"Action":"output","Package":"a","Test":"TestSlow","Output":"    slow_test.go:12: moved 2 instances\n        more of it\n"}`,
		`{"Action":"output","Package":"a","Test":"TestSlow","Output":"    proc.go:53: last lines of wave-a's log:\n    slow_test.go:9: last lines of x\n"}`,
		`{"Action":"output","Package":"a","Test":"TestSlow","Output":"    slow_test.go:20: \n"}`,
		`{"Action":"output","Package":"a","Test":"TestSlow","Output":"        \tError Trace:\t/src/a/slow_test.go:20\n        \tError:      \tNot equal: \n"}`,
		`{"Action":"output","Package":"a","Test":"TestSlow","Output":"        \t            \texpected: 3\n"}`,
		`{"Action":"output","Package":"a","Test":"TestSlow","Output":"--- FAIL: TestSlow (41.50s)\n"}`,
		`{"Action":"fail","Package":"a","Test":"TestSlow","Elapsed":41.5}`,
		`{"Action":"fail","Package":"a","Elapsed":42}`,
		`# b [b.test]`,
		`{"ImportPath":"e [e.test]","Action":"build-output","Output":"./a.go:2:12: undefined: x\n"}`,
		`{"ImportPath":"e [e.test]","Action":"build-fail"}`,
		`{"Action":"output","Package":"e","Output":"FAIL\te [build failed]\n"}`,
		`{"Action":"fail","Package":"e","Elapsed":0,"FailedBuild":"e [e.test]"}`,
		`{"Action":"output","Package":"b","Output":"panic: boom\n"}`,
		`{"Action":"fail","Package":"b","Elapsed":1}`,
		`{"Action":"skip","Package":"c","Elapsed":0}`,
		`{"Action":"run","Package":"d","Test":"TestSkips"}`,
		`{"Action":"skip","Package":"d","Test":"TestSkips","Elapsed":0}`,
		`{"Action":"pass","Package":"d","Elapsed":3}`,
	}, "\n")
	var out bytes.Buffer
	r := &report{out: &out, output: map[string][]string{}}
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	r.summary(2)
	got := out.String()
	for _, want := range []string{
		"a:\nwant 3, got 2\n    slow_test.go:12: moved 2 instances\n",
		"slow_test.go:9: last lines of x\n",
		"expected: 3\n--- FAIL: TestSlow (41.50s)\n",
		"FAIL\ta\t42.0s\n",
		"# b [b.test]\n",
		"FAIL\tb\t1.0s\npanic: boom\n",
		"?\tc\t[no test files]\n",
		"./a.go:2:12: undefined: x\n",
		"FAIL\te\t0.0s\nFAIL\te [build failed]\n",
		"ok\td\t3.0s\n",
		"1 tests passed, 1 skipped, 1 failed; 3 packages failed\n",
		"the 2 slowest tests:\n     41.5s  a TestSlow\n      0.5s  a TestFast\n",
		"the 2 slowest packages:\n     42.0s  a\n      3.0s  d\n",
		"failed:\n  a TestSlow\n  a\n  e\n  b\n",
		"what the failed tests said:\n  a TestSlow: slow_test.go:12: moved 2 instances\n  a TestSlow: slow_test.go:20: Not equal:\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	for _, never := range []string{"quiet", "sub says"} {
		if strings.Contains(got, never) {
			t.Errorf("a passing test's output %q is shown:\n%s", never, got)
		}
	}
	_, said, _ := strings.Cut(got, "what the failed tests said:\n")
	if strings.Contains(said, "last lines of") || strings.Contains(said, "more of it") {
		t.Errorf("the closing summary repeats a log dump or a message's later lines:\n%s", said)
	}
}

// TestReportSideBySide: two streams read together, both running package w (a pass with
// and one without -race, say): a test failing in one shows its own output only, and the
// counts and the slowest span both streams.
func TestReportSideBySide(t *testing.T) {
	race := strings.Join([]string{
		`{"Action":"run","Package":"w","Test":"TestVolume"}`,
		`{"Action":"output","Package":"w","Test":"TestVolume","Output":"race run\n"}`,
		`{"Action":"output","Package":"w","Test":"TestVolume","Output":"--- FAIL: TestVolume (9.00s)\n"}`,
		`{"Action":"fail","Package":"w","Test":"TestVolume","Elapsed":9}`,
		`{"Action":"fail","Package":"w","Elapsed":10}`,
	}, "\n")
	norace := strings.Join([]string{
		`{"Action":"run","Package":"w","Test":"TestVolume"}`,
		`{"Action":"output","Package":"w","Test":"TestVolume","Output":"norace run\n"}`,
		`{"Action":"pass","Package":"w","Test":"TestVolume","Elapsed":30}`,
		`{"Action":"pass","Package":"w","Elapsed":31}`,
		`{"Action":"pass","Package":"v","Elapsed":1}`,
	}, "\n")
	var out bytes.Buffer
	r := &report{out: &out, output: map[string][]string{}}
	if err := r.read(strings.NewReader(race), strings.NewReader(norace)); err != nil {
		t.Fatal(err)
	}
	r.summary(3)
	got := out.String()
	for _, want := range []string{
		"w:\nrace run\n--- FAIL: TestVolume (9.00s)\n",
		"1 tests passed, 0 skipped, 1 failed; 1 packages failed\n",
		"the 2 slowest tests:\n     30.0s  w TestVolume\n      9.0s  w TestVolume\n",
		"the 3 slowest packages:\n     31.0s  w\n     10.0s  w\n      1.0s  v\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "norace run") {
		t.Errorf("the passing stream's output is shown:\n%s", got)
	}
}
