package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile profiles the process into path until the returned stop runs, so that
// an operator or a bench can see where a role's CPU goes under its real load.
func startCPUProfile(path string) (stop func(), err error) {
	return startRecording("cpuprofile", path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace records an execution trace into path until the returned stop runs: where a
// pipeline's goroutines waited, which a CPU profile cannot show (go tool trace, or
// go tool trace -pprof=sync|net|sched).
func startTrace(path string) (stop func(), err error) {
	return startRecording("trace", path, trace.Start, trace.Stop)
}

// startRecording creates path and starts a recorder writing into it; stop ends the
// recording and closes the file.
func startRecording(what, path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return func() { end(); f.Close() }, nil
}

// startProfiles starts the CPU profile and the trace whose paths are set; stop ends both.
func startProfiles(cpuPath, tracePath string) (stop func(), err error) {
	stopCPU, stopTrace := func() {}, func() {}
	if cpuPath != "" {
		if stopCPU, err = startCPUProfile(cpuPath); err != nil {
			return nil, err
		}
	}
	if tracePath != "" {
		if stopTrace, err = startTrace(tracePath); err != nil {
			stopCPU()
			return nil, err
		}
	}
	return func() { stopTrace(); stopCPU() }, nil
}
