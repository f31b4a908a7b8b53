//go:build !agentonly

package main

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/alarm"
	alarmapi "github.com/binlake/binlake/alarm/api"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/wave"
)

// upStatus is what the judge's status page reads, in `binlake up`, from the alarm and the
// wave in the same process: the firing alerts and the instances with their full errors.
// (A judge on its own reads the alarm's API, and the instance states the agents report;
// see judge/status.go.) The alarm and the wave are set once built, while the judge may
// already serve.
type upStatus struct {
	node     string
	alarmURL string
	alarm    atomic.Pointer[alarm.Alarm]
	wave     atomic.Pointer[wave.Wave]
}

func newUpStatus(o *upOptions) *upStatus {
	s := &upStatus{node: o.Node}
	// The link to the alarm, when its address is known before it listens (not port 0).
	if host, port, err := net.SplitHostPort(o.AlarmListen); err == nil && port != "0" {
		if host == "" {
			host = "127.0.0.1"
		}
		s.alarmURL = "http://" + net.JoinHostPort(host, port)
	}
	return s
}

func (s *upStatus) options() judge.StatusOptions {
	return judge.StatusOptions{AlarmURL: s.alarmURL, Alerts: s.alerts, Instances: s.instances}
}

func (s *upStatus) alerts(context.Context) ([]alarmapi.Alert, error) {
	a := s.alarm.Load()
	if a == nil {
		return nil, nil
	}
	return a.Engine().Firing(), nil
}

func (s *upStatus) instances(context.Context) ([]judge.InstanceState, error) {
	w := s.wave.Load()
	if w == nil {
		return nil, nil
	}
	var out []judge.InstanceState
	for _, st := range w.Status() {
		is := judge.InstanceState{Node: s.node, Instance: st.ID, State: st.State, Reason: st.Reason, Error: st.Error}
		if t, err := time.Parse(time.RFC3339, st.Since); err == nil {
			is.Since = t
		}
		out = append(out, is)
	}
	return out, nil
}
