package alarm

import (
	"time"

	"github.com/binlake/binlake/alarm/policy"
)

// Notification groups, after Alertmanager's: the alerts of a policy that share the values
// of its group_by labels (policy.Policy.Group) go out in one message per channel. The
// writer keeps the groups (writer.enqueue, writer.flush):
//
//   - the first alert due in a group waits group_wait for others, then the group is sent;
//   - after a notification, the group's alerts that fall due within group_interval wait
//     for its end and go out together, so a group sends at most one message per
//     group_interval; a group with nothing due once its group_interval ran out is
//     forgotten, and its next alert waits group_wait again (group_interval 0, the
//     default, forgets it at once: every notification waits group_wait);
//   - repeat_interval stays per alert, not per group: an alert's page is claimed in the
//     shared notification log (one page per alert and repeat interval across alarm
//     processes), and a message carries the alerts that fell due (new pages, repeats,
//     resolutions), not every alert of the group still firing. No process sees a whole
//     group: its alerts may be on nodes other processes evaluate.

// groupWait is how long a new group of p waits for more alerts.
func (e *Engine) groupWait(p *policy.Policy) time.Duration {
	if p.GroupWait != nil {
		return *p.GroupWait
	}
	return e.o.GroupWait
}

// groupInterval is how long after a notification of a group of p its next one waits.
func (e *Engine) groupInterval(p *policy.Policy) time.Duration {
	if p.GroupInterval != nil {
		return *p.GroupInterval
	}
	return e.o.GroupInterval
}

// sendAt is when a group with nothing pending sends an alert falling due now: group_wait
// from now, or at the end of the group_interval of its last notification while that runs.
func (g *group) sendAt(now time.Time, wait, interval time.Duration) time.Time {
	if end := g.sentAt.Add(interval); !g.sentAt.IsZero() && now.Before(end) {
		return end
	}
	return now.Add(wait)
}
