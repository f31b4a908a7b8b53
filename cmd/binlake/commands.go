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
	"instance": {"add, list, show, remove or move capture instances", runInstance},
	"tail":     {"print the rows a wave published to a topic or file, from a position", runTail},
	"bench":    {"run a benchmark against the test services", runBench},
	"version":  {"print the version", runVersion},
}
