//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// checkInstanceFile is `instance add --check`: the definition is read as add reads it
// (strict keys, the file, line and key of a mistake, then wave.Instance's rules), and
// nothing is connected to, so it runs anywhere. The source's password is not read: the
// waves read it on their own hosts, so the check says where they look. With connect, the
// source is read as add reads it (checkSourceFromHere).
func checkInstanceFile(ctx context.Context, path string, connect bool, out io.Writer) error {
	if path == "" {
		return errors.New("instance add --check: -f instance.yaml is required")
	}
	inst, err := loadInstanceFile(path)
	if err != nil {
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
	summary := fmt.Sprintf("instance %s, source %s@%s (%s, server id %d), %d subscription(s); %s",
		inst.ID, src.User, src.Addr, src.Flavor, src.ServerID, len(inst.Subscriptions), password)
	if !connect {
		fmt.Fprintf(out, "%s is valid: %s\n", path, summary)
		return nil
	}
	// The verdict waits for the source: "valid" and then a refusal read as a pass.
	fmt.Fprintf(out, "%s: %s\n", path, summary)
	read, warned, err := checkSourceFromHere(ctx, &inst, false, false, out)
	switch {
	case err != nil:
		return fmt.Errorf("instance add --check -connect: %s is well formed, but add would refuse it: %w", path, err)
	case read && warned > 0:
		fmt.Fprintf(out, "%s is valid; source %s read from here: %d warning(s) above\n", path, src.Addr, warned)
	case read:
		fmt.Fprintf(out, "%s is valid; source %s read from here: binlog settings, privileges and server_id %d checked, no problem\n", path, src.Addr, src.ServerID)
	default:
		// Asked to connect, a source not read is no pass: a script could not tell a wrong
		// password from a clean check.
		return fmt.Errorf("instance add --check -connect: %s is valid, but source %s could not be read from here (above): nothing was checked (add would store it unchecked)", path, src.Addr)
	}
	return nil
}

// loadInstanceFile reads a new definition as add, set -f and add --check do: strict keys
// and cluster.Instance's rules, then what only a new definition is refused
// (cluster.Instance.CheckNew), each problem at its line of the file.
func loadInstanceFile(path string) (cluster.Instance, error) {
	var inst cluster.Instance
	inst.AsNew() // CheckNew's problems in the one list, in the file's order
	err := config.Load(path, &inst)
	return inst, err
}

// checkSourceFromHere reads inst's source with its password from this host, as add does
// before storing it (wave.CheckSource): a server_id taken at the source refuses; a binlog
// setting that would stop the instance is a warning line, and so is a source not read,
// unless startSays (add's start line says why the source could not be read). reading:
// the instance reads the source under its server_id already (wave.CheckSource). read says
// whether the source was read, warned how many warnings were said.
func checkSourceFromHere(ctx context.Context, inst *cluster.Instance, startSays, reading bool, out io.Writer) (read bool, warned int, err error) {
	warnings, err := wave.CheckSource(ctx, inst, wave.SourcePassword, reading)
	read = !errors.Is(err, wave.ErrSourceNotRead)
	if !read {
		if !startSays {
			warnings = append(warnings, err.Error())
		}
		err = nil
	}
	for _, w := range warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	return read, len(warnings), err
}
