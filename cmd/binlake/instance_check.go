//go:build !agentonly

package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
)

// checkInstanceFile is `instance add --check`: the definition is read as add reads it
// (strict keys, the file, line and key of a mistake, then wave.Instance's rules), and
// nothing is connected to, so it runs anywhere. The source's password is not read: the
// waves read it on their own hosts, so the check says where they look.
func checkInstanceFile(path string, out io.Writer) error {
	if path == "" {
		return errors.New("instance add --check: -f instance.yaml is required")
	}
	var inst cluster.Instance
	if err := config.Load(path, &inst); err != nil {
		return err
	}
	src := inst.Source
	password := "no password (neither source.password_env nor source.password_file is set)"
	switch {
	case src.PasswordEnv != "":
		password = "each wave reads the password from its environment variable " + src.PasswordEnv
	case src.PasswordFile != "":
		password = "each wave reads the password from its file " + src.PasswordFile
	}
	fmt.Fprintf(out, "%s is valid: instance %s, source %s@%s (%s, server id %d), %d subscription(s); %s\n",
		path, inst.ID, src.User, src.Addr, src.Flavor, src.ServerID, len(inst.Subscriptions), password)
	return nil
}
