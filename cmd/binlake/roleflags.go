package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/logging"
)

// roleFlags are the flags every role (judge, alarm, wave, agent) takes beside its own:
// its config file, -log-level, -check and -cpuprofile. Each role's command then runs
// the same preamble (start), so that they do not drift apart.
type roleFlags struct {
	fs                           *flag.FlagSet
	role                         string
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
		fs:         fs,
		role:       role,
		config:     fs.String("config", "/etc/binlake/"+role+".yaml", role+" config file (see deploy/"+role+".example.yaml)"),
		logLevel:   fs.String("log-level", "", "override log.level: debug, info, warn or error"),
		check:      fs.Bool("check", false, "run every check start runs on "+checks+" and exit; connects to nothing"),
		cpuProfile: fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)"),
	}
}

// configFile is the config's path as the start log names it: absolute, so that a line
// read later, or from a service whose working directory is not the shell's, says which
// file (as given when it cannot be made absolute).
func (rf *roleFlags) configFile() string {
	if abs, err := filepath.Abs(*rf.config); err == nil {
		return abs
	}
	return *rf.config
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

// loadConfig loads the role's -config file with load (judge.Load, …). When -config was
// not given and its default does not exist, most likely a first try of the role, the
// error says how to give one, or to run up, which needs none.
func loadConfig[C any](rf *roleFlags, load func(string) (C, error)) (C, error) {
	cfg, err := load(*rf.config)
	if err != nil && defaultMissing(rf.fs, "config") {
		err = fmt.Errorf("%w; give the %s's config with -config FILE (deploy/%s.example.yaml is a commented example)%s", err, rf.role, rf.role, upHint)
	}
	return cfg, err
}

// defaultMissing says whether flag name was not given on fs and its default names no
// file: opening it fails with a path the user never gave, so the error should ask for
// the flag instead.
func defaultMissing(fs *flag.FlagSet, name string) bool {
	if flagSet(fs, name) {
		return false
	}
	_, err := os.Stat(fs.Lookup(name).Value.String())
	return errors.Is(err, os.ErrNotExist)
}

// positiveShutdown refuses a -shutdown-timeout of 0 or less: the stop would have no time
// at all (it was taken as the default, 30 s, while the start line said the value given).
func positiveShutdown(d config.Duration) error {
	if d.D() <= 0 {
		return fmt.Errorf("bad -shutdown-timeout %s: want more than 0 (how long stopping may take)", d)
	}
	return nil
}
