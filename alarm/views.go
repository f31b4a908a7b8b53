package alarm

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/binlake/binlake/alarm/api"
	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
)

// The alerts as the API and the status page show them.

// AlertView is an alert as GET /v1/alerts shows it (alarm/api, which the judge's status
// page reads too).
type AlertView = api.Alert

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// Alerts lists the alerts that are not inactive, most severe first, then by name and
// node, and the alerts the notification log holds firing on this process's nodes that
// it will continue once their next batches come (Restore): a restart listed none of
// them until then.
func (e *Engine) Alerts() []AlertView {
	var out []AlertView
	var restored []restoredView
	for _, sh := range e.shards {
		sh.mu.Lock()
		out = sh.appendViews(out, e.now())
		restored = sh.appendRestored(restored, e.now())
		sh.mu.Unlock()
	}
	owns := e.owns.Load()
	for _, r := range restored {
		if owns == nil || (*owns)(r.node) { // the log holds every process's alerts
			out = append(out, r.AlertView)
		}
	}
	sortViews(out)
	return out
}

func (sh *shard) appendViews(out []AlertView, now time.Time) []AlertView {
	for _, a := range sh.alerts {
		if a.state != StateInactive {
			out = append(out, sh.e.view(a, now))
		}
	}
	return out
}

// restoredView is a restored alert's view, and its node.
type restoredView struct {
	AlertView
	node string
}

// appendRestored appends the views of the shard's restored alerts, firing.
func (sh *shard) appendRestored(out []restoredView, now time.Time) []restoredView {
	for node, les := range sh.restored {
		for fp, le := range les {
			p := sh.e.byName[le.Policy]
			if p == nil {
				continue // its policy left the file: endOrphan resolves it
			}
			a := sh.alertOf(fp, p, le.Labels, node)
			a.state, a.value, a.activeSince, a.firingSince = StateFiring, le.Value, le.ActiveSince, le.FiringSince
			a.sent, a.lastSent = le.Sent, le.LastSent
			out = append(out, restoredView{sh.e.view(a, now), node})
		}
	}
	return out
}

// view is a as GET /v1/alerts shows it.
func (e *Engine) view(a *alertState, now time.Time) AlertView {
	v := AlertView{Fingerprint: a.fps, State: a.state.String(), Labels: a.labels,
		Annotations: e.render(a), Value: a.value, ActiveSince: tp(a.activeSince),
		Notifications: a.sent, LastNotified: tp(a.lastSent), SilencedBy: e.silenced(a, now), Inhibited: a.state == StateFiring && e.inhibited(a)}
	if v.SilencedBy == nil {
		v.SilencedBy = []string{}
	}
	if a.state == StatePending {
		// A new episode, not paged yet: what it holds of notifications is the last
		// episode's, kept for the repeat interval (a pending alert read as notified).
		v.Notifications, v.LastNotified = 0, nil
	}
	if a.state == StateFiring || a.state == StateResolved {
		v.FiringSince = tp(a.firingSince)
	}
	if a.state == StateResolved {
		v.ResolvedAt = tp(a.resolvedAt)
	}
	if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
		v.Value = 0
	}
	return v
}

// sortViews orders alerts most severe first, then by name and node.
func sortViews(out []AlertView) {
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Labels, out[j].Labels
		if a[policy.LabelSeverity] != b[policy.LabelSeverity] {
			return a[policy.LabelSeverity] < b[policy.LabelSeverity]
		}
		if a[policy.LabelAlertName] != b[policy.LabelAlertName] {
			return a[policy.LabelAlertName] < b[policy.LabelAlertName]
		}
		if a[policy.LabelNode] != b[policy.LabelNode] {
			return a[policy.LabelNode] < b[policy.LabelNode]
		}
		return out[i].Fingerprint < out[j].Fingerprint
	})
}

// Counts returns how many alerts are pending, firing and resolved, the restored ones
// Alerts lists among those firing.
func (e *Engine) Counts() (pending, firing, resolved int) {
	var restored []string // their nodes
	for _, sh := range e.shards {
		sh.mu.Lock()
		pending, firing, resolved = pending+sh.counts[StatePending], firing+sh.counts[StateFiring], resolved+sh.counts[StateResolved]
		for node, les := range sh.restored {
			for _, le := range les {
				if e.byName[le.Policy] != nil {
					restored = append(restored, node)
				}
			}
		}
		sh.mu.Unlock()
	}
	owns := e.owns.Load()
	for _, node := range restored {
		if owns == nil || (*owns)(node) {
			firing++
		}
	}
	return pending, firing, resolved
}

// Firing lists the firing alerts, most severe first, then by name and node.
func (e *Engine) Firing() []AlertView {
	out := []AlertView{}
	for _, v := range e.Alerts() {
		if v.State == api.StateFiring {
			out = append(out, v)
		}
	}
	return out
}

// resendResolved is how long a resolved alert is sent again with the firing ones
// (RefreshFor), as Prometheus sends resolved alerts to Alertmanager for 15 minutes.
const resendResolved = 15 * time.Minute

// RefreshFor returns the alerts routed to channel whose page was sent or tried (a failed
// page is retried after its lease; the refresh may reach a channel that came back
// sooner), firing or resolved within resendResolved (kept as long as the engine keeps
// them, EngineOptions.ResolvedRetention): what a channel that must hear about its alerts
// again (notify.Refresher, Alertmanager) is sent every interval. A resolved one carries
// its resolution as endsAt: an Alertmanager that was down when the resolution went out
// (and whose retries gave up) ends it when it comes back, not at the endsAt the last
// refresh gave it, four intervals on, with a resolution of its own. An alert the process restored from the
// notification log is among them, so a restart does not let Alertmanager's copy lapse;
// another process's alerts are that process's to refresh. A silence or an inhibition of
// this alarm's that came after the page does not stop its refresh: Alertmanager would
// take the alert for resolved once its endsAt passed (telling its receivers so), then
// for a new one when the mute ended; there the silences and inhibitions are
// Alertmanager's own. One muted before its first page is never sent.
func (e *Engine) RefreshFor(channel string) []notify.Alert {
	var out []notify.Alert
	now := e.now()
	for _, sh := range e.shards {
		sh.mu.Lock()
		for _, a := range sh.alerts {
			if a.sent == 0 && a.holdUntil.IsZero() || !slices.Contains(a.p.Channels, channel) {
				continue
			}
			switch {
			case a.state == StateFiring:
				out = append(out, e.notifyAlert(a, notify.StatusFiring))
			case a.state == StateResolved && now.Sub(a.resolvedClock) < resendResolved:
				out = append(out, e.notifyAlert(a, notify.StatusResolved))
			}
		}
		sh.mu.Unlock()
	}
	return out
}
