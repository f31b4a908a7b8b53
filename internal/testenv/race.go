//go:build race

package testenv

// Race is true in a test binary built with -race. Tests whose point is volume run a
// smaller volume under the race detector, which slows the wave's row path ten-fold,
// and their full volume in make test's second pass, without it.
const Race = true
