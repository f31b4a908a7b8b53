package alarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// LogEntry is what the notification log remembers of one alert's episode: enough to
// continue it after a restart (or on another alarm process after a rebalance) without
// paging early, to send its resolution exactly once, and to refuse a replayed point from
// before a decision. An entry goes firing → resolving (ResolvedAt set, its resolved
// notice claimed and on its way) → resolved (ResolveSent: a tombstone, kept
// EngineOptions.ResolvedRetention, then removed). Every change is a compare-and-set, so
// of several processes evaluating the same alert (the overlap of a rebalance, a stale
// copy of the log) exactly one pages and exactly one resolves.
type LogEntry struct {
	Fingerprint string            `json:"fingerprint"`
	Policy      string            `json:"policy"`
	Labels      map[string]string `json:"labels"`
	ActiveSince time.Time         `json:"active_since"`
	FiringSince time.Time         `json:"firing_since"`
	// QueuedAt is when a page was claimed and queued (by any alarm process); LastSent
	// when one was delivered. A page queued after the last delivery is pending: if its
	// process crashed, whoever evaluates the alert resends it once the claim's lease ran
	// out (see Engine).
	QueuedAt time.Time `json:"queued_at,omitzero"`
	LastSent time.Time `json:"last_sent,omitzero"`
	Sent     int       `json:"sent"`
	// ClaimedBy names the alarm process of the latest claim, page or resolved notice
	// (its consumer-group process; empty without a group): a claim whose process left
	// the group is taken over before its lease ends.
	ClaimedBy string `json:"claimed_by,omitempty"`
	// PagedBy names the process of the latest page claim (ClaimedBy names the resolved
	// notice's once the episode resolved): whoever takes the resolution over waits for
	// that page while its process lives, instead of paging again.
	PagedBy string `json:"paged_by,omitempty"`
	// EvalTS is the own time of the newest point the decision to fire rested on (for
	// nodata: the node's last point): a claim resting on older points than the episode's
	// resolution is a replay, and is refused.
	EvalTS time.Time `json:"eval_ts,omitzero"`
	// Value is the alert's value at its last change, for the resolved notice.
	Value float64 `json:"value,omitempty"`
	// ResolvedAt is when the alert resolved (zero while it fires) and ResolvedTS the own
	// time of the point that resolved it. ResolveQueuedAt is when its resolved notice was
	// claimed and queued (zero: released by a stopping process, anyone may send it);
	// ResolveSent once the notice was delivered, or when there was none to send.
	ResolvedAt      time.Time `json:"resolved_at,omitzero"`
	ResolvedTS      time.Time `json:"resolved_ts,omitzero"`
	ResolveQueuedAt time.Time `json:"resolve_queued_at,omitzero"`
	ResolveSent     bool      `json:"resolve_sent,omitempty"`
	// Delivery is recorded per channel, so that a channel that was down when the others
	// delivered (its retries cut short by a stop or a crash) still gets its page, and
	// only the channels that got a page get the resolution. Owed are the channels the
	// latest page (claimed at QueuedAt; handed back when QueuedAt is zero) has not
	// reached; Untold those no page of the episode reached (nil: every channel got one,
	// or the entry predates per-channel records); ResolveOwed, while resolving, those
	// the resolved notice has not reached (nil: all of the policy's channels). Each
	// channel is removed as it delivers; the resolution is sent once the last one did.
	Owed        []string `json:"owed,omitempty"`
	Untold      []string `json:"untold,omitempty"`
	ResolveOwed []string `json:"resolve_owed,omitempty"`
	// Channels are the policy's channels at the latest claim: where the resolution of an
	// alert whose policy is gone from the file goes (orphans.go).
	Channels []string `json:"channels,omitempty"`
	// GroupBy is the policy's group_by at the latest claim when it is not the default:
	// the stand-in of a gone policy groups its resolution as the page was grouped (it
	// went out under the default grouping, another group key than the page's).
	GroupBy []string `json:"group_by,omitempty"`
	// Prior is the last episode's resolved notice while some channel is still owed it
	// when the next episode's claim took the entry over: its process's queue still held it
	// (a slow receiver), or a channel gave it up, or the next episode's page waits for it
	// (holdInLog). Delivered, each channel leaves Owed. While its sender lives (By) the
	// next episode's page waits for it; handed back, or its sender gone, it goes again
	// before the next page a process claims, or else just before the next episode's
	// resolution (in the middle of the next episode, it would close that one at receivers
	// that key incidents on the fingerprint). Before, it was forgotten with the entry: a
	// stop or a failure left the receiver's incident open (an outside trial: 16 of 202
	// episodes).
	Prior *PriorResolution `json:"prior,omitempty"`
}

// PriorResolution is LogEntry.Prior: the episode's times and value, and the channels
// still owed its resolved notice.
type PriorResolution struct {
	FiringSince time.Time `json:"firing_since"`
	ResolvedAt  time.Time `json:"resolved_at"`
	ResolvedTS  time.Time `json:"resolved_ts,omitzero"`
	Value       float64   `json:"value,omitempty"`
	Owed        []string  `json:"owed"`
	// Unpaged are the channels of Owed that no page of the episode reached when the
	// next episode took the entry over: they get the page first. A late delivery of that
	// page (claimed at PageAt) takes its channel out.
	Unpaged []string  `json:"unpaged,omitempty"`
	PageAt  time.Time `json:"page_at,omitzero"`
	// By names the process that has the resolved notice on its way while it does (empty:
	// handed back, or never sent): nobody sends it again while that process lives.
	By string `json:"by,omitempty"`
	// QueuedAt is when By queued it (the resolution's ResolveQueuedAt): its lease runs
	// from then.
	QueuedAt time.Time `json:"queued_at,omitzero"`
	// Before is the episode before's, still owed when this one became the entry's
	// Prior: a slow receiver's queue can hold several resolutions, and one Prior kept
	// lost the older (an outside trial). At most maxPriors deep.
	Before *PriorResolution `json:"before,omitempty"`
}

// priorKey names a Prior on its way from here (Engine.tellingPrior): its entry's
// fingerprint and the end of its episode.
type priorKey struct {
	fp string
	at int64 // the episode's ResolvedAt, in Unix nanoseconds
}

func priorKeyOf(fp string, at time.Time) priorKey { return priorKey{fp: fp, at: at.UnixNano()} }

// maxPriors is how many earlier episodes' resolutions an entry keeps owed: a receiver
// that took none of them for this many episodes is down, not slow, and the oldest is
// dropped (with a warning) rather than growing the entry without end.
const maxPriors = 8

// priors is the entry's Priors, oldest first.
func (e LogEntry) priors() []*PriorResolution {
	var ps []*PriorResolution
	for p := e.Prior; p != nil; p = p.Before {
		ps = append(ps, p)
	}
	slices.Reverse(ps)
	return ps
}

// prior is the entry's Prior whose episode resolved at at, or nil.
func (e LogEntry) prior(at time.Time) *PriorResolution {
	for p := e.Prior; p != nil; p = p.Before {
		if p.ResolvedAt.Equal(at) {
			return p
		}
	}
	return nil
}

// dropPrior removes the Prior resolved at at from the entry.
func (e *LogEntry) dropPrior(at time.Time) {
	for pp := &e.Prior; *pp != nil; pp = &(*pp).Before {
		if (*pp).ResolvedAt.Equal(at) {
			*pp = (*pp).Before
			return
		}
	}
}

// withPrior is p (the last episode's resolution, nil when none is owed) as the entry's
// Prior, ahead of older, the Priors the entry held; it returns the oldest dropped past
// maxPriors.
func withPrior(p, older *PriorResolution) (head, dropped *PriorResolution) {
	if p == nil {
		return older, nil
	}
	p.Before = older
	n := 1
	for q := p; q.Before != nil; q = q.Before {
		if n++; n > maxPriors {
			dropped, q.Before = q.Before, nil
			break
		}
	}
	return p, dropped
}

// priorOf is le's resolution as the next episode's Prior, owed to the channels le's
// resolved notice has not reached of chans (the policy's), on its way from process by
// (empty: from none); nil when none is owed.
func priorOf(le LogEntry, chans []string, by string) *PriorResolution {
	owed := le.resolveOwedOf(chans)
	if len(owed) == 0 {
		return nil
	}
	return &PriorResolution{FiringSince: le.FiringSince, ResolvedAt: le.ResolvedAt, ResolvedTS: le.ResolvedTS, Value: le.Value,
		Owed: owed, Unpaged: le.unpagedOf(chans, owed), PageAt: le.QueuedAt, By: by, QueuedAt: le.ResolveQueuedAt}
}

// unpagedOf is the channels of chans (the policy's) that the latest page still owes and
// no page of the episode reached, of among only when among is not nil.
func (e LogEntry) unpagedOf(chans, among []string) []string {
	told := e.toldOf(chans)
	var unpaged []string
	for _, c := range e.owedOf(chans) {
		if (among == nil || slices.Contains(among, c)) && !slices.Contains(told, c) {
			unpaged = append(unpaged, c)
		}
	}
	return unpaged
}

// priorView is le as the episode of its Prior p was: the entry its resolved notice is
// rendered from.
func priorView(le LogEntry, p *PriorResolution) LogEntry {
	pv := le
	pv.Prior = nil
	pv.FiringSince, pv.ResolvedAt, pv.ResolvedTS, pv.Value, pv.ResolveOwed = p.FiringSince, p.ResolvedAt, p.ResolvedTS, p.Value, p.Owed
	pv.Owed, pv.Untold, pv.QueuedAt = p.Unpaged, p.Unpaged, time.Time{}
	return pv
}

// addedChannels is the channels of chans (the policy's) that the entry's latest claim did
// not page (not among its Channels): the policy gained them since. None for an entry
// that predates the record.
func (e LogEntry) addedChannels(chans []string) []string {
	if e.Channels == nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(chans), func(c string) bool {
		return slices.Contains(e.Channels, c) || slices.Contains(e.Owed, c)
	})
}

// owes reports whether a page has not reached every channel yet: some are owed it, or
// (an entry without per-channel records) it was queued after the last delivery.
func (e LogEntry) owes() bool {
	return len(e.Owed) > 0 || !e.QueuedAt.IsZero() && e.QueuedAt.After(e.LastSent)
}

// pending reports whether a page was claimed (queued) and not (yet) delivered to every
// channel; a page handed back (QueuedAt cleared) is owed, not pending.
func (e LogEntry) pending() bool { return !e.QueuedAt.IsZero() && e.owes() }

// owedOf is the channels of chans (the policy's) that the latest page still owes: all of
// them for an entry without per-channel records whose page is undelivered.
func (e LogEntry) owedOf(chans []string) []string {
	if len(e.Owed) > 0 {
		return slices.DeleteFunc(slices.Clone(chans), func(c string) bool { return !slices.Contains(e.Owed, c) })
	}
	if e.owes() {
		return slices.Clone(chans)
	}
	return nil
}

// toldOf is the channels of chans that a page of the episode reached.
func (e LogEntry) toldOf(chans []string) []string {
	if e.Sent == 0 && e.LastSent.IsZero() {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(chans), func(c string) bool { return slices.Contains(e.Untold, c) })
}

// resolveOwedOf is the channels of chans that the resolved notice still owes.
func (e LogEntry) resolveOwedOf(chans []string) []string {
	if e.ResolveOwed == nil {
		return slices.Clone(chans)
	}
	return slices.DeleteFunc(slices.Clone(chans), func(c string) bool { return !slices.Contains(e.ResolveOwed, c) })
}

// resolvedClock is when a resolved entry's resolution was decided, as near as the entry
// tells on the clock (its tombstone's retention runs from it): ResolvedAt is on the
// points' time, long past for an episode read from a backlog, so a told resolution
// counts from its notice's claim.
func (e LogEntry) resolvedClock() time.Time {
	if e.ResolveQueuedAt.After(e.ResolvedAt) {
		return e.ResolveQueuedAt
	}
	return e.ResolvedAt
}

// firing reports whether the entry's episode has not resolved.
func (e LogEntry) firing() bool { return e.ResolvedAt.IsZero() }

// resolving reports whether the episode resolved and its notice is not delivered yet.
func (e LogEntry) resolving() bool { return !e.firing() && !e.ResolveSent }

// NotificationLog persists the state of firing alerts.
type NotificationLog interface {
	// Load returns every entry.
	Load(ctx context.Context) ([]LogEntry, error)
	// Save creates or replaces the entry of e.Fingerprint.
	Save(ctx context.Context, e LogEntry) error
	// Remove forgets an entry if its version is still version (coord.AnyVersion: in any
	// case), else fails with coord.ErrVersionConflict; removing a missing one is not an
	// error.
	Remove(ctx context.Context, fingerprint string, version int64) error
	// Get returns one entry and its version, or coord.ErrNotFound.
	Get(ctx context.Context, fingerprint string) (LogEntry, int64, error)
	// Put writes e if its version is still version (coord.NoVersion: create), else
	// fails with coord.ErrVersionConflict: the compare-and-set that lets one alarm
	// process, of several sharing the log, claim a page.
	Put(ctx context.Context, e LogEntry, version int64) error
}

// DefaultLogPrefix is where CoordLog keeps its entries.
const DefaultLogPrefix = "alarm/nflog"

// CoordLog is the NotificationLog on a coord.Coordinator: one key per firing alert, so the
// same code serves the embedded shape (coord/single, a file) and the distributed one
// (coord/zk, where every alarm process of the group sees the same log).
type CoordLog struct {
	C      coord.Coordinator
	Prefix string // DefaultLogPrefix when empty
}

var _ NotificationLog = (*CoordLog)(nil)

func (l *CoordLog) prefix() string {
	if l.Prefix == "" {
		return DefaultLogPrefix
	}
	return l.Prefix
}

// Load implements NotificationLog. An unreadable entry is skipped with an error joined to
// the result, so one corrupt entry does not hide the others.
func (l *CoordLog) Load(ctx context.Context) ([]LogEntry, error) {
	names, err := l.C.List(ctx, l.prefix())
	if errors.Is(err, coord.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("notification log: list: %w", err)
	}
	var (
		out  []LogEntry
		errs []error
	)
	for _, n := range names {
		v, err := l.C.Get(ctx, l.prefix()+"/"+n)
		if errors.Is(err, coord.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return out, fmt.Errorf("notification log: get %s: %w", n, err)
		}
		var e LogEntry
		if err := json.Unmarshal(v.Data, &e); err != nil || e.Fingerprint != n {
			errs = append(errs, fmt.Errorf("notification log: entry %s is corrupt; ignored", n))
			continue
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}

// Save implements NotificationLog.
func (l *CoordLog) Save(ctx context.Context, e LogEntry) error {
	return l.Put(ctx, e, coord.AnyVersion)
}

// Put implements NotificationLog.
func (l *CoordLog) Put(ctx context.Context, e LogEntry, version int64) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("notification log: encode: %w", err)
	}
	if _, err := l.C.Put(ctx, l.prefix()+"/"+e.Fingerprint, data, version); err != nil {
		return fmt.Errorf("notification log: save %s: %w", e.Fingerprint, err)
	}
	return nil
}

// Get implements NotificationLog.
func (l *CoordLog) Get(ctx context.Context, fp string) (LogEntry, int64, error) {
	v, err := l.C.Get(ctx, l.prefix()+"/"+fp)
	if err != nil {
		return LogEntry{}, 0, fmt.Errorf("notification log: get %s: %w", fp, err)
	}
	var e LogEntry
	if err := json.Unmarshal(v.Data, &e); err != nil || e.Fingerprint != fp {
		// A corrupt entry is overwritten by the next claim.
		return LogEntry{}, v.Version, nil
	}
	return e, v.Version, nil
}

// Remove implements NotificationLog.
func (l *CoordLog) Remove(ctx context.Context, fp string, version int64) error {
	err := l.C.Delete(ctx, l.prefix()+"/"+fp, version)
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		return fmt.Errorf("notification log: remove %s: %w", fp, err)
	}
	return nil
}
