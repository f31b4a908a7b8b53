package alarm

import (
	"slices"
	"sync"
	"time"
)

// claimSkew is how much later than a claim's time the group's membership must have been
// heard for its absence to count: the claim carries its process's clock, and a process
// that joined just before claiming may be missing from a slightly older answer.
const claimSkew = time.Second

// claimers is what the bus last said of the alarm processes in the consumer group
// (bus.Position): this process's name, which claims in the notification log carry, the
// live ones, and when that was heard. A claim whose process the group stopped listing
// after the claim was made was left by a crash (kill -9: the group notices after its
// session timeout); waiting out the claim's lease (minutes) would hold its page back for
// nothing, so it is taken over at once.
type claimers struct {
	mu    sync.Mutex
	self  string
	live  []string
	heard time.Time
	// grouped: this process is in a consumer group whose membership it is to hear
	// (ExpectMembers).
	grouped bool
}

// ExpectMembers says that this process is in a consumer group (its bus reports the
// group's processes): until the group first answers, another process's claim may be a
// live one's (mayBeAlive).
func (e *Engine) ExpectMembers() {
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	e.cl.grouped = true
}

// SetMembers records the group's processes as the bus answered them (sorted), and this
// process's name among them. Without a group (one process, the in-process bus) claims
// carry no name and only their lease ends them.
func (e *Engine) SetMembers(self string, live []string) {
	now := e.now()
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	e.cl.self, e.cl.live, e.cl.heard = self, slices.Clone(live), now
}

// claimerAlive reports whether the process named by a claim is another process the
// group's latest membership lists, live or draining: it still delivers what it claimed,
// or hands it back (a channel gave it up, its drain ended), and its claims stay its own
// however long its channel's queue holds them. A claim without a name, this process's
// own (an earlier process of the same name cannot be: names are per process), or one
// read before any membership was heard is not known alive.
func (e *Engine) claimerAlive(by string) bool {
	if by == "" {
		return false
	}
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	if by == e.cl.self || e.cl.heard.IsZero() {
		return false
	}
	_, found := slices.BinarySearch(e.cl.live, by)
	return found
}

// mayBeAlive is claimerAlive, and true too for another process's name before the
// group's membership was first heard (a process just started in its group): what that
// process has on its way is left to it until the group answers. Taken for gone, a
// restarted process's first evaluation paged and resolved again what a live one was
// delivering (an outside trial).
func (e *Engine) mayBeAlive(by string) bool {
	if by == "" || by == e.claimer() {
		return false
	}
	e.cl.mu.Lock()
	unheard := e.cl.grouped && e.cl.heard.IsZero()
	e.cl.mu.Unlock()
	return unheard || e.claimerAlive(by)
}

// membersHeard reports whether the group's membership was heard yet.
func (e *Engine) membersHeard() bool {
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	return !e.cl.heard.IsZero()
}

// claimer is the name this process's claims carry ("" while it knows none).
func (e *Engine) claimer() string {
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	return e.cl.self
}

// claimerGone reports whether the process that made a claim at the given time (its
// clock) is known to have left: the group's membership, heard after the claim, does not
// list it. A claim without a name, or one newer than what was heard, is not known gone.
func (e *Engine) claimerGone(by string, at time.Time) bool {
	if by == "" {
		return false
	}
	e.cl.mu.Lock()
	defer e.cl.mu.Unlock()
	if by == e.cl.self || e.cl.heard.IsZero() || !e.cl.heard.After(at.Add(claimSkew)) {
		return false
	}
	_, found := slices.BinarySearch(e.cl.live, by)
	return !found
}
