package cluster

import (
	"sync"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// What this wave knows of the waves' membership, from its own watch since it registered:
// which waves are live, which it saw alive and then leave (and when), and since when it
// watches. Both the election fallback (shouldRun) and the balancer's failover decide from
// it whether a wave that is not live is dead or may still be starting.

// Members is the membership as this wave's watch has seen it. It is fed by one
// goroutine (watchWaves) and read by the instance loop and the balancer.
type Members struct {
	mu    sync.Mutex
	start time.Time            // when the watch began: a wave never seen alive is absent since then
	live  map[string]bool      // the latest member list
	left  map[string]time.Time // waves seen alive, then gone: when the watch first saw them gone
	gen   uint64               // member lists applied so far
	// changed is closed when the next member list is applied.
	changed chan struct{}
}

// NewMembers is the membership of a watch that began at start.
func NewMembers(start time.Time) *Members {
	return &Members{start: start, live: map[string]bool{}, left: map[string]time.Time{}, changed: make(chan struct{})}
}

// Apply records a member list read at now.
func (m *Members) Apply(ms []coord.Member, now time.Time) {
	live := make(map[string]bool, len(ms))
	for _, mb := range ms {
		live[mb.ID] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for node := range m.live {
		if !live[node] {
			m.left[node] = now
		}
	}
	for node := range live {
		delete(m.left, node)
	}
	m.live = live
	m.gen++
	close(m.changed)
	m.changed = make(chan struct{})
}

// Changes returns how many member lists were applied so far and a channel closed when
// the next one is.
func (m *Members) Changes() (uint64, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen, m.changed
}

// Absence is how a wave is absent from the membership, as this wave saw it.
type Absence struct {
	Live bool // not absent
	// Seen: this wave saw it alive and then leave. Its coordinator session ended, which
	// for a crash took the session timeout: the grace a dead wave needs is behind it.
	Seen bool
	// Since is when it left (Seen), or else when this wave began watching.
	Since time.Time
	// Stopped: it left saying it was asked to stop (StoppedCleanly), as a deploy restarts
	// it. The watch does not know it; the balancer reads it and sets it.
	Stopped bool
}

// Absence reports how node is absent.
func (m *Members) Absence(node string) Absence {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live[node] {
		return Absence{Live: true}
	}
	if at, ok := m.left[node]; ok {
		return Absence{Seen: true, Since: at}
	}
	return Absence{Since: m.start}
}

// DeadAt is when the balancer counts a wave so absent as dead and places its instances
// elsewhere: at once for a wave it saw leave (Seen) without saying it stopped (a crash:
// its session's timeout is behind it), but a wave this wave never saw alive may be
// starting (a whole-cluster restart brings the waves back one by one, and the first one
// back wins the balancer election), and one that stopped cleanly may be restarting: they
// get grace, counted from when this wave began watching or saw it leave, to register.
// The zero time for a live wave.
func (a Absence) DeadAt(grace time.Duration) time.Time {
	switch {
	case a.Live:
		return time.Time{}
	case a.Seen && !a.Stopped:
		return a.Since
	default:
		return a.Since.Add(grace)
	}
}
