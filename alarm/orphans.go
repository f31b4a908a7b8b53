package alarm

import (
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/binlake/binlake/alarm/policy"
)

// Firing entries whose policy is gone. Policies change only by a restart with another
// file; an alert that fired under a policy the new file no longer has (removed, or
// renamed) is evaluated by no process, and its entry stayed firing in the log for good:
// the receiver's incident stayed open, and nothing said so (an outside trial). Each
// entry records the channels of its latest claim (LogEntry.Channels), so the process
// that reads the alert's node resolves it there, as one whose series ended, through a
// stand-in policy of the same name that can only resolve (orphanPolicy); its summary
// says why. An entry written before the channels were recorded cannot be resolved (the
// log keeps only the channels a page missed): it is said, once per process, with what
// to do. Both kinds count in binlake_alarm_orphaned_alerts while the log holds them.

// orphanRepeat is the stand-in's repeat interval: it never pages again.
const orphanRepeat = 24 * time.Hour

// orphanSummary is the stand-in's summary; the name comes as data, whatever it holds.
var orphanSummary = template.Must(template.New("summary").Parse(
	`{{ .Node }}: resolved without evaluation: policy {{ .Policy }} is no longer in the alarm's policies (removed or renamed while it fired)`))

// policyOf is the policy le's alert goes by: this process's of its name, else, for an
// entry whose policy is gone and that recorded its channels, the stand-in; nil when
// neither.
func (e *Engine) policyOf(le LogEntry) *policy.Policy {
	if p := e.byName[le.Policy]; p != nil {
		return p
	}
	if len(le.Channels) == 0 {
		return nil
	}
	chans := le.Channels
	if e.o.Channels != nil {
		// A channel removed from the config with the policy cannot be told: its
		// resolution was queued nowhere, and the entry stayed owing it for good, never a
		// tombstone (an outside trial).
		chans = slices.DeleteFunc(slices.Clone(chans), func(c string) bool { return !slices.Contains(e.o.Channels, c) })
		if len(chans) == 0 {
			return nil
		}
	}
	return e.orphanPolicy(le.Policy, chans, le.GroupBy, le.Labels[policy.LabelSeverity])
}

// orphanPolicy is the stand-in for a policy named name that is gone from the file,
// paging channels at severity (its alerts' label, so that inhibitions weigh it as the
// gone one) and grouping by groupBy (nil: the default), as the gone one did: no
// condition (it never fires), a summary that says why it resolved, one object per name,
// channels, grouping and severity (the dispatcher groups by policy).
func (e *Engine) orphanPolicy(name string, channels, groupBy []string, severity string) *policy.Policy {
	if groupBy == nil {
		groupBy = policy.DefaultGroupBy
	}
	key := name + "\xff" + severity + "\xff" + strings.Join(channels, "\xff") + "\xfe" + strings.Join(groupBy, "\xff")
	e.orphanMu.Lock()
	defer e.orphanMu.Unlock()
	if p := e.orphanPols[key]; p != nil {
		return p
	}
	p := &policy.Policy{Name: name, Channels: channels, RepeatInterval: orphanRepeat, GroupBy: groupBy,
		Annotations: map[string]*template.Template{"summary": orphanSummary}}
	if sev, err := policy.ParseSeverity(severity); err == nil {
		p.Severity = sev
	}
	if e.orphanPols == nil {
		e.orphanPols = map[string]*policy.Policy{}
	}
	e.orphanPols[key] = p
	return p
}

// noteOrphans takes the entries a Restore loaded (partial: the load failed part-way,
// so an entry missing from it may still be there) and says, once per process, each
// firing one whose policy this process does not have.
func (e *Engine) noteOrphans(entries []LogEntry, partial bool) {
	e.orphanMu.Lock()
	defer e.orphanMu.Unlock()
	found := map[string]bool{}
	for _, le := range entries {
		if !le.firing() || e.byName[le.Policy] != nil {
			continue
		}
		found[le.Fingerprint] = true
		if e.orphans[le.Fingerprint] {
			continue
		}
		if len(le.Channels) > 0 {
			e.log.Warn("the notification log holds an alert firing under a policy this alarm does not have (removed or renamed): it is resolved, to the channels it paged, when its node next reports",
				"policy", le.Policy, "labels", le.Labels, "firing_since", le.FiringSince, "channels", le.Channels)
			continue
		}
		e.log.Warn("the notification log holds an alert firing under a policy this alarm does not have (removed or renamed), logged before alerts recorded their channels: no process will resolve it; put the policy back under its name for it to resolve, or close the incident at the receiver",
			"policy", le.Policy, "labels", le.Labels, "firing_since", le.FiringSince, "fingerprint", le.Fingerprint)
	}
	if partial {
		for fp := range e.orphans {
			found[fp] = true
		}
	}
	e.orphans = found
}

// Orphans is how many firing entries of the log the last Restore found without their
// policy here.
func (e *Engine) Orphans() int {
	e.orphanMu.Lock()
	defer e.orphanMu.Unlock()
	return len(e.orphans)
}
