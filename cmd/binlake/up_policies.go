//go:build !agentonly

package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/deploy"
	"github.com/binlake/binlake/internal/config"
)

// The alert side of `binlake up`: its default policies, and its --policies and
// --channels files.

// DefaultPolicies are the policies `up` runs without --policies: deploy/policies.yaml,
// the ones install.sh installs for the alarm (a dead agent, high CPU, memory and disk,
// replication lag, a capture instance that is not running, publish errors and the
// cluster's capacity), all to the log channel.
func DefaultPolicies() ([]*policy.Policy, error) {
	return policy.Parse(bytes.NewReader(deploy.Policies), "built-in policies (deploy/policies.yaml)")
}

// LogChannel is the channel every `up` has: alerts as warnings in its log. Every policy
// of up notifies it, whether or not the policy names it, so that the log is the one place
// that shows every alert.
const LogChannel = "log"

// Channels are the alarm's notification channels.
type Channels struct {
	Notifiers map[string]notify.Notifier
	// Desc describes each, without secrets, for the start-up log.
	Desc []string
	// File is the --channels file they came from; empty for the log channel alone.
	File string
}

// alarmFile is alarm.yaml as `up --channels` reads it: the alarm's own config type, so
// that the alarm's file is accepted as it is, but a defined type without its Validate,
// since a file holding only a channels: section is valid for up and only the channels
// are used (the bus, coordinator and HTTP of up are its own).
type alarmFile alarm.Config

// LoadChannels builds the log channel plus, when path is set, the channels of a YAML file
// in alarm.yaml's format: the alarm's config file itself, or a file with only its
// "channels:" section. Every channel must build: one whose secret file (url_file,
// password_file…) cannot be read is an error naming the channel and the file, since a
// channel given on purpose and silently left out would lose the alerts sent to it.
func LoadChannels(path string, logger *slog.Logger) (Channels, error) {
	var ac alarm.Config
	if path != "" {
		var f alarmFile
		if err := config.Load(path, &f); err != nil {
			return Channels{}, err
		}
		if len(f.Channels) == 0 {
			return Channels{}, fmt.Errorf("%s: no channels: want a mapping under \"channels:\"", path)
		}
		if ch, ok := f.Channels[LogChannel]; ok && ch.Kind != "log" {
			return Channels{}, fmt.Errorf("%s: channels.%s is kind %q: the name %q is up's log channel, which every policy notifies; give this channel another name", path, LogChannel, ch.Kind, LogChannel)
		}
		ac.Channels = f.Channels
	}
	if ac.Channels == nil {
		ac.Channels = map[string]alarm.Channel{}
	}
	if _, ok := ac.Channels[LogChannel]; !ok {
		ac.Channels[LogChannel] = alarm.Channel{Kind: "log"}
	}
	// Validate checks each channel; the bus and coordinator of `up` are its own.
	ac.Bus.Kind = alarm.BusNone
	if err := ac.Validate(); err != nil {
		return Channels{}, config.Locate(path, err)
	}
	n, desc, err := ac.BuildChannels(logger)
	if err != nil {
		return Channels{}, config.Locate(path, err)
	}
	return Channels{Notifiers: n, Desc: desc, File: path}, nil
}

// LoadPolicies reads a policy file, or returns DefaultPolicies sent to every channel of
// chans when path is empty. Every policy notifies LogChannel too.
//
// With a channels file (chans.File), every channel a policy names must be in it: a
// misspelt channel is an error naming the policy and the channel. Without one, a policy
// naming channels up does not have (those of the alarm's config, say) still runs, its
// alerts going to the log: toLog lists those channels, for the caller to say so once.
func LoadPolicies(path string, chans Channels) (pols []*policy.Policy, toLog []string, err error) {
	if path == "" {
		pols, err := DefaultPolicies()
		if err != nil {
			return nil, nil, err
		}
		for _, p := range pols {
			p.Channels = channelNames(chans)
		}
		return pols, nil, nil
	}
	pols, err = policy.Load(path)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pols {
		kept := make([]string, 0, len(p.Channels)+1)
		for _, c := range p.Channels {
			switch {
			case chans.Notifiers[c] != nil:
				kept = append(kept, c)
			case chans.File != "":
				return nil, nil, fmt.Errorf("%s:%d: policy %q names channel %q, which -channels %s does not configure (it has %s)",
					path, p.Line, p.Name, c, chans.File, strings.Join(channelNames(chans), ", "))
			default:
				if !slices.Contains(toLog, c) {
					toLog = append(toLog, c)
				}
			}
		}
		if !slices.Contains(kept, LogChannel) {
			kept = append(kept, LogChannel)
		}
		p.Channels = kept
	}
	slices.Sort(toLog)
	return pols, toLog, nil
}

func channelNames(chans Channels) []string {
	names := make([]string, 0, len(chans.Notifiers))
	for n := range chans.Notifiers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
