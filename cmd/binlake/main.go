// Command binlake is the one binary of BinLake-Go: binlake up|wave|agent|alarm|judge|instance|bench|version.
// Each subcommand parses its flags into the options of one package and calls its Run(ctx).
//
// Conventions every subcommand follows: usage text goes to stderr (stdout is kept for what
// a command produces, such as rows or JSON); -h/--help prints it and exits 0; a bad flag
// or argument prints a short usage and then the error, last, and exits 2; any other
// failure prints "binlake: <error>" and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand: its one-line summary and the function that runs it.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// errUsage marks an error already explained to the user with usage text (exit status 2).
var errUsage = errors.New("usage")

// usageError is a flag or argument error that parseFlags has already printed after a
// short usage: main exits 2 without printing it again, while tests and callers still
// see the flag package's message.
type usageError struct{ err error }

func (e *usageError) Error() string        { return e.err.Error() }
func (e *usageError) Unwrap() error        { return e.err }
func (e *usageError) Is(target error) bool { return target == errUsage }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	args := os.Args[1:]
	err := interrupted(ctx, args, run(ctx, args, os.Stdout, os.Stderr), os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// interrupted is err, or errInterrupted when the signal context ended a command that was
// not done: Ctrl-C during bench fleet said "fleet simulation: context canceled". A
// service (a role, or up) asked to stop while it was still starting (systemd's SIGTERM
// while a wave waits for ZooKeeper) has done what it was asked: it says so and ends
// with status 0, so that the stop does not leave a failed unit.
func interrupted(ctx context.Context, args []string, err error, stderr io.Writer) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	if len(args) > 0 && services[args[0]] {
		fmt.Fprintf(stderr, "binlake %s: stopped while it was starting\n", args[0])
		return nil
	}
	return errInterrupted
}

// services are the commands that run until they are stopped.
var services = map[string]bool{"wave": true, "agent": true, "alarm": true, "judge": true, "up": true}

// errInterrupted is a command stopped by a signal before it was done (exit status 130,
// as a shell reports SIGINT).
var errInterrupted = errors.New("interrupted before it was done")

// exitCode prints err unless it was explained already and returns the process's status:
// 0 for success and for help asked for, 2 for a usage error, 1 for any other failure.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errInterrupted):
		fmt.Fprintf(stderr, "%s: %v\n", progName, err)
		return 130
	default:
		fmt.Fprintf(stderr, "%s: %v\n", progName, err)
		return 1
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stderr)
		return nil
	case "-v", "-version", "--version":
		if _, ok := commands["version"]; ok {
			return runVersion(ctx, args[1:], stdout, stderr)
		}
	}
	cmd, ok := commands[args[0]]
	if !ok {
		// The usage first and the error last, where the eye lands after the command.
		fmt.Fprintf(stderr, "Usage: %s <command> [flags]  (%s -h lists the commands)\n", progName, progName)
		if strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "%s: unknown flag %s: flags go after the command\n", progName, args[0])
		} else {
			fmt.Fprintf(stderr, "%s: unknown command %q\n", progName, args[0])
		}
		return errUsage
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // help was asked for and printed
	}
	return explainAddrInUse(args[0], err)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s <command> [flags]\n\nCommands:\n", progName)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\n%s --version (or -v) prints the version.\nRun '%s <command> -h' for the flags of a command.\n", progName, progName)
}

// parseFlags parses a subcommand's flags. -h prints the subcommand's full usage and
// returns flag.ErrHelp, which run turns into success. A bad flag prints a two-line usage
// and then the error, so that the error is the last line the user sees rather than
// scrolled away above a page of flags, and returns a usageError (exit status 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, full := fs.Output(), fs.Usage
	// Silence the flag package's own report (error first, then the full usage).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = full
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if full != nil {
			full()
		} else {
			fmt.Fprintf(out, "Usage of %s %s:\n", progName, fs.Name())
			fs.PrintDefaults()
		}
		return flag.ErrHelp
	}
	fmt.Fprintf(out, "Usage: %s %s [flags]  (%s %s -h lists them)\n", progName, fs.Name(), progName, fs.Name())
	fmt.Fprintf(out, "%s %s: %v\n", progName, fs.Name(), err)
	return &usageError{err}
}

// parseNoArgs is parseFlags for a command that takes no arguments: one left after the
// flags is refused, as "judge --check bad.yaml" (which checked /etc/binlake/judge.yaml and
// said it was valid) shows it must be: flags stop at the first argument, so those after
// it would be dropped too.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return nil
	}
	hint := ""
	if strings.HasSuffix(fs.Arg(0), ".yaml") || strings.HasSuffix(fs.Arg(0), ".yml") {
		hint = fmt.Sprintf(" (a config file goes after -config: %s %s -config %s)", progName, fs.Name(), fs.Arg(0))
	}
	err := fmt.Errorf("takes no arguments, got %q%s", fs.Args(), hint)
	fmt.Fprintf(fs.Output(), "Usage: %s %s [flags]  (%s %s -h lists them)\n", progName, fs.Name(), progName, fs.Name())
	fmt.Fprintf(fs.Output(), "%s %s: %v\n", progName, fs.Name(), err)
	return &usageError{err}
}

// listenKeys name, per role, the setting that changes its listen address, for the
// message of a port clash. up names its own flags (see upListenError).
var listenKeys = map[string]string{
	"judge": "http.listen in the config (or -http)",
	"alarm": "http.listen in the config (or -http)",
	"wave":  "http.listen in the config (or -http)",
	"agent": "http.listen in the config (or off)",
}

// explainAddrInUse rewrites a role's "listen tcp …: address already in use" into which
// address is taken and which setting picks another, adds the setting to any other
// failure to listen, and passes other errors unchanged.
func explainAddrInUse(cmd string, err error) error {
	key, ok := listenKeys[cmd]
	if !ok || err == nil {
		return err
	}
	if addr, inUse := addrInUse(err); inUse {
		return fmt.Errorf("%s: %s is in use by another process: pick another with %s", cmd, addr, key)
	}
	// Any other failure to listen (a host name that does not resolve, an address this
	// host does not have) names the setting too: "listen tcp: lookup no such host" did not.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "listen" {
		return fmt.Errorf("%w: check %s", err, key)
	}
	return err
}

// addrInUse reports whether err is a failed listen on an address another socket holds,
// and which address.
func addrInUse(err error) (string, bool) {
	var op *net.OpError
	if !errors.Is(err, syscall.EADDRINUSE) || !errors.As(err, &op) || op.Op != "listen" {
		return "", false
	}
	if op.Addr != nil {
		return op.Addr.String(), true
	}
	return "", true
}
