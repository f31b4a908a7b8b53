package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/logging"
)

// roleFlags are the flags every role (judge, alarm, wave, agent) takes beside its own:
// its config file, -log-level, -check and -cpuprofile. Each role's command then runs
// the same preamble (start), so that they do not drift apart.
type roleFlags struct {
	config, logLevel, cpuProfile *string
	check                        *bool
}

// newRoleFlags is a role's flag set, its errors and -h written to stderr, with the flags
// every role takes defined; usage is the help's head (the lines before "Flags:"), checks
// says what -check looks at beyond the config's keys (its secret and TLS files, the
// policy file, …). The role defines its own flags on the set after these.
func newRoleFlags(stderr io.Writer, role, usage, checks string) (*flag.FlagSet, *roleFlags) {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage+"\n\nFlags:")
		fs.PrintDefaults()
	}
	return fs, &roleFlags{
		config:     fs.String("config", "/etc/binlake/"+role+".yaml", role+" config file (see deploy/"+role+".example.yaml)"),
		logLevel:   fs.String("log-level", "", "override log.level: debug, info, warn or error"),
		check:      fs.Bool("check", false, "run every check start runs on "+checks+" and exit; connects to nothing"),
		cpuProfile: fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)"),
	}
}

// start is the roles' preamble, after the role has applied its own flags to its config
// (overridden says whether any did): -log-level goes into log, the config is validated
// again when a flag changed it (a flag's bad value is named as one), the logger is built,
// and for a run (not -check) the CPU profile starts; stop ends it.
func (rf *roleFlags) start(stderr io.Writer, log *config.Log, overridden bool, validate func() error) (logger *slog.Logger, stop func(), err error) {
	if *rf.logLevel != "" {
		log.Level = *rf.logLevel
		overridden = true
	}
	if overridden {
		if err := validate(); err != nil {
			return nil, nil, fmt.Errorf("flags: %w", err)
		}
	}
	if logger, err = logging.New(stderr, log.Level, log.Format); err != nil {
		return nil, nil, fmt.Errorf("%s: field \"log\": %w", *rf.config, err)
	}
	stop = func() {}
	if *rf.cpuProfile != "" && !*rf.check {
		if stop, err = startCPUProfile(*rf.cpuProfile); err != nil {
			return nil, nil, err
		}
	}
	return logger, stop, nil
}
