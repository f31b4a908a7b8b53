//go:build !agentonly

package main

import (
	"fmt"
	"time"

	"github.com/binlake/binlake/wave/cluster"
)

// stateText is an instance's recorded state as `instance list` prints it: the state and,
// when it is not running, the error's class ("retrying, access_denied"); "(last known)"
// when the wave that recorded it is not live, or another leads it now, so that a stopped
// `binlake up` does not read as running.
func stateText(i *cluster.InstanceInfo) string {
	s := stateClass(i)
	if i.LastKnown {
		s += " (last known)"
	}
	return s
}

// stateClass is the state and, when the leader recorded one, the error's class.
func stateClass(i *cluster.InstanceInfo) string {
	switch {
	case i.State == "":
		return "-"
	case i.Reason != "":
		return i.State + ", " + i.Reason
	}
	return i.State
}

// sinceText is when the recorded state began, with its age: "2026-05-01T10:00:00Z (3m12s
// ago)"; "-" when none was recorded.
func sinceText(i *cluster.InstanceInfo, now time.Time) string {
	t, err := time.Parse(time.RFC3339, i.Since)
	if err != nil {
		if i.Since == "" {
			return "-"
		}
		return i.Since
	}
	return fmt.Sprintf("%s (%s ago)", i.Since, max(0, now.Sub(t)).Round(time.Second))
}

// stateLine is the state of `instance show`: the state, its class, since when, and
// whether it is only the last one known.
func stateLine(i *cluster.InstanceInfo, now time.Time) string {
	if i.State == "" {
		return "-"
	}
	s := stateClass(i)
	if i.Since != "" {
		s += " since " + sinceText(i, now)
	}
	switch {
	case i.LastKnown && i.Leader != "" && i.Leader != i.StateNode:
		s += "; last known: recorded by " + i.StateNode + ", " + i.Leader + " leads it now"
	case i.LastKnown:
		s += "; last known: recorded by " + i.StateNode + ", which is not live now"
	}
	return s
}
