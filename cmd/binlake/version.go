package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/binlake/binlake/internal/buildinfo"
)

// runVersion is `binlake version`, also reached as `binlake --version` and `binlake -v`.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s version\n\nPrints the version, the Go version and the platform (also: %s --version, %s -v).\n", progName, progName, progName)
	}
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "Usage: %s version\n%s version: unexpected argument %q\n", progName, progName, fs.Arg(0))
		return errUsage
	}
	_, err := fmt.Fprintf(stdout, "binlake %s (%s %s/%s)\n", buildinfo.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
