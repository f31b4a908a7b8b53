package alarm

// Firing entries whose policy is gone. Policies change only by a restart with another
// file; an alert that fired under a policy the new file no longer has (removed, or
// renamed) is evaluated by no process, so its entry stays firing in the log and the
// receiver's incident stays open: an outside trial removed a firing policy, restarted
// the alarm, and no resolution nor any word of it came. Resolving it needs the channels
// its page reached, which the log does not record per entry (only those it did not
// reach); until it does, each such entry is said once per process, with what to do, and
// counted in binlake_alarm_orphaned_alerts.

// noteOrphans takes the entries a Restore loaded (partial: the load failed part-way,
// so an entry missing from it may still be there) and warns of each firing one whose
// policy this process does not have, once per process.
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
		e.log.Warn("the notification log holds an alert firing under a policy this alarm does not have (removed or renamed): no process will resolve it; put the policy back under its name for it to resolve, or close the incident at the receiver",
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
