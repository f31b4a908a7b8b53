package judge

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/lbplugins"
)

// DefaultReservationTTL is how long a placement counts on its node when the node never
// reports the instance (it reports no wave.instances, or the instance never started).
const DefaultReservationTTL = 2 * time.Minute

// Reservation is capacity a placement holds on its node until the node's reported
// wave.instances shows the instance (reaches Target) or the reservation expires.
type Reservation struct {
	Instance  string    `json:"instance"`
	Node      string    `json:"node"`
	At        time.Time `json:"at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Target is the wave.instances the node reports once it runs the instance: what it
	// reported at placement plus its reservations then, this one included. Zero when the
	// node reports no instance count (only expiry ends the reservation).
	Target float64 `json:"target_instances,omitempty"`
}

// reservations are the judge's placement feedback. Placements read the pending counts
// lock-free (an immutable list behind an atomic pointer); reserving and sweeping take a
// mutex and publish a new list.
type reservations struct {
	ttl time.Duration

	mu     sync.Mutex
	byNode map[string][]Reservation

	pending    atomic.Pointer[[]lbplugins.Pending]
	nextExpiry atomic.Int64 // UnixNano of the earliest expiry; 0 when none
}

func newReservations(ttl time.Duration) *reservations {
	if ttl <= 0 {
		ttl = DefaultReservationTTL
	}
	return &reservations{ttl: ttl, byNode: map[string][]Reservation{}}
}

// Pending returns the reserved instances per node, for a decision. It must not be
// modified.
func (rs *reservations) Pending() []lbplugins.Pending {
	if p := rs.pending.Load(); p != nil {
		return *p
	}
	return nil
}

// Due reports whether a reservation has expired by now, so that a sweep is needed.
func (rs *reservations) Due(now time.Time) bool {
	n := rs.nextExpiry.Load()
	return n != 0 && now.UnixNano() >= n
}

// Reserve records a placement of instance on node; reported is the node's
// wave.instances at the decision (ok false when it reports none).
func (rs *reservations) Reserve(node, instance string, now time.Time, reported float64, ok bool) Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := Reservation{Instance: instance, Node: node, At: now, ExpiresAt: now.Add(rs.ttl)}
	if ok {
		r.Target = reported + float64(len(rs.byNode[node])) + 1
	}
	rs.byNode[node] = append(rs.byNode[node], r)
	rs.publishLocked()
	return r
}

// Sweep drops the reservations that expired by now and those whose node reports
// enough instances (reported gives a node's wave.instances).
func (rs *reservations) Sweep(now time.Time, reported func(node string) (float64, bool)) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	changed := false
	for node, list := range rs.byNode {
		count, ok := reported(node)
		kept := slices.DeleteFunc(list, func(r Reservation) bool {
			return !now.Before(r.ExpiresAt) || (ok && r.Target > 0 && count >= r.Target)
		})
		if len(kept) != len(list) {
			changed = true
		}
		if len(kept) == 0 {
			delete(rs.byNode, node)
		} else {
			rs.byNode[node] = kept
		}
	}
	if changed {
		rs.publishLocked()
	}
}

// Node returns a node's reservations, oldest first.
func (rs *reservations) Node(node string) []Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.byNode[node])
}

func (rs *reservations) publishLocked() {
	list := make([]lbplugins.Pending, 0, len(rs.byNode))
	var next int64
	for node, rr := range rs.byNode {
		list = append(list, lbplugins.Pending{Node: node, Instances: float64(len(rr))})
		for _, r := range rr {
			if e := r.ExpiresAt.UnixNano(); next == 0 || e < next {
				next = e
			}
		}
	}
	rs.pending.Store(&list)
	rs.nextExpiry.Store(next)
}
