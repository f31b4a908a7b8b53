//go:build !agentonly

package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
)

// zkCoordinator is the coordinator that the -zk, -root, -zk-user and -zk-password-file
// flags of cmd (instance add, tail, …) name: the ZooKeeper servers, with the digest
// credentials when the cluster sets coordinator.auth (the password from the file, or
// from $BINLAKE_ZK_PASSWORD, which wins).
func zkCoordinator(cmd, servers, root, user, passwordFile string) (config.Coordinator, error) {
	cc := config.Coordinator{Kind: config.CoordZK, Servers: strings.Split(servers, ","), Root: root,
		SessionTimeout: config.Duration(10 * time.Second)}
	for _, s := range cc.Servers {
		if strings.Contains(s, "@") {
			// The servers are printed (zk … root …): no user or password in them.
			return cc, fmt.Errorf("%s: -zk %q: want host:port, without a user or password (digest auth: -zk-user and -zk-password-file)", cmd, config.Redact(s))
		}
	}
	if user != "" {
		if passwordFile == "" && os.Getenv(zkPasswordEnv) == "" {
			return cc, fmt.Errorf("%s: -zk-user %s: give -zk-password-file or set %s", cmd, user, zkPasswordEnv)
		}
		cc.Auth = config.CoordAuth{Username: user, PasswordFile: passwordFile, PasswordEnv: zkPasswordEnv}
	}
	return cc, nil
}
