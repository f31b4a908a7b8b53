package agent

import (
	"net"

	"github.com/binlake/binlake/agent/collector"
)

func netListen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func collectorEnv() collector.Env { return collector.Env{} }
