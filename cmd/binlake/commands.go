//go:build !agentonly

package main

// commands are the subcommands of the full binary. A build with -tags agentonly
// (bin/binlake-agent, `make build-agent`) has only the agent's: see commands_agent.go.
// progName is the binary's name in usage and error text.
const progName = "binlake"

var commands = map[string]command{
	"up":       {"run judge, alarm and an agent in one process on embedded defaults", runUp},
	"wave":     {"capture MySQL/MariaDB binlogs and publish rows to Kafka", runWave},
	"agent":    {"collect host, runtime and wave metrics and push them", runAgent},
	"judge":    {"store metrics, analyse load and answer placement requests", runJudge},
	"alarm":    {"evaluate alert policies over the metric stream and notify", runAlarm},
	"instance": {"add, list, show, set, remove, move, snapshot or rebalance capture instances", runInstance},
	"tail":     {"print the rows a wave published to a topic or file, from a position", runTail},
	"bench":    {"benchmark the wave or alarm (on the test services), the judge or a simulated fleet", runBench},
	"version":  {"print the version", runVersion},
}

// upHint ends the error of a role started without its config: up runs the roles on one
// machine with none.
const upHint = ", or run binlake up: the suite on one machine (judge, alarm, an agent, and a wave with --mysql) on embedded defaults, no config needed"
