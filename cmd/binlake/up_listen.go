//go:build !agentonly

package main

import (
	"fmt"
	"strings"

	"github.com/binlake/binlake/internal/config"
)

// upListen reads the address flag name of binlake up: host:port, or a port alone, which
// listens on 127.0.0.1 as up's defaults do ("0" picks a free port there; ":0" would bind
// every interface, which a port alone must not do by surprise).
func upListen(name, v string) (string, error) {
	addr := v
	if v != "" && strings.Trim(v, "0123456789") == "" {
		addr = "127.0.0.1:" + v
	}
	if err := config.CheckListen(addr); err != nil {
		return "", fmt.Errorf("bad %s: %w", name, err)
	}
	return addr, nil
}
