//go:build agentonly

package main

// commands of the slim agent build (`make build-agent`): linking only the agent keeps its
// resident memory below node_exporter's on the hosts it watches (BENCHMARKS.md, "agent").
// progName is the binary's name in usage and error text: this build is installed as
// binlake-agent, and its help must not send the operator to a binlake it lacks.
const progName = "binlake-agent"

var commands = map[string]command{
	"agent":   {"collect host, runtime and wave metrics and push them", runAgent},
	"version": {"print the version", runVersion},
}

// upHint is empty: this build has no up to send the operator to.
const upHint = ""
