package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile profiles the process into path until the returned stop runs, so that
// an operator or a bench can see where a role's CPU goes under its real load.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// startTrace records an execution trace into path until the returned stop runs: where a
// pipeline's goroutines waited, which a CPU profile cannot show (go tool trace, or
// go tool trace -pprof=sync|net|sched).
func startTrace(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	return func() { trace.Stop(); f.Close() }, nil
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
