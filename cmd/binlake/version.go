package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/binlake/binlake/internal/buildinfo"
)

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	_, err := fmt.Fprintf(stdout, "binlake %s (%s %s/%s)\n", buildinfo.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
