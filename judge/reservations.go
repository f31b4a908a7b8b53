package judge

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/lbplugins"
)

// Reservation defaults: how long a placement counts on its node when the node never
// reports the instance (it reports no wave.instances, or the instance never started),
// and how many placements may be pending at once (a bound on memory when nothing
// reports: past it, placements are answered without a reservation, and counted).
const (
	DefaultReservationTTL = 2 * time.Minute
	maxReservations       = 100_000
)

// reservations are the judge's placement feedback. The bookkeeping (who, until when)
// sits behind a mutex that only reserving and sweeping take; decisions read per-node
// counts aligned with the snapshot they decide on (lbplugins.Reserved, atomics), so a
// placement reads them without a lock or a lookup by name.
type reservations struct {
	ttl time.Duration
	// changed is told of every reservation made (r) and ended (r nil), under the mutex,
	// so that the judge keeps them in its store across a restart (restore).
	changed func(instance string, r *api.Reservation)

	mu     sync.Mutex
	byNode map[string][]api.Reservation
	// nodeOf is where each instance's one reservation is: a placement asked again for
	// the same instance (a client's retry, instance add after an answer it did not use)
	// replaces the last one rather than counting the instance twice.
	nodeOf map[string]string
	total  int
	snap   *lbplugins.Snapshot // the published snapshot the counts belong to
	counts *lbplugins.Reserved // its per-node counts

	size       atomic.Int64
	refused    atomic.Int64
	nextExpiry atomic.Int64 // UnixNano of the earliest expiry; 0 when none
}

func newReservations(ttl time.Duration, changed func(instance string, r *api.Reservation)) *reservations {
	if ttl <= 0 {
		ttl = DefaultReservationTTL
	}
	return &reservations{ttl: ttl, changed: changed, byNode: map[string][]api.Reservation{}, nodeOf: map[string]string{}}
}

// Due reports whether a reservation has expired by now, so that a sweep is needed.
func (rs *reservations) Due(now time.Time) bool {
	n := rs.nextExpiry.Load()
	return n != 0 && now.UnixNano() >= n
}

// Reserve records a placement of instance on node with its expected work; reported is
// the node's wave.instances at the decision (ok false when it reports none). The work
// counts on the node in cores at its prices. It returns false when maxReservations are
// pending.
func (rs *reservations) Reserve(node, instance string, now time.Time, reported float64, ok bool, work api.Work) (api.Reservation, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.dropLocked(instance)
	if rs.total >= maxReservations {
		rs.refused.Add(1)
		return api.Reservation{}, false
	}
	r := api.Reservation{Instance: instance, Node: node, At: now, ExpiresAt: now.Add(rs.ttl), Expected: work}
	if ok {
		r.Target = reported + float64(len(rs.byNode[node])) + 1
	}
	r = rs.addLocked(r)
	rs.changed(instance, &r)
	return r, true
}

// addLocked adds r, which expires no earlier than any pending reservation (a node's list
// is oldest first), priced at its node's prices when the node is in the snapshot.
func (rs *reservations) addLocked(r api.Reservation) api.Reservation {
	i, found := rs.index(r.Node)
	if found {
		r.Cores = coresOn(rs.snap, i, r.Expected)
	}
	rs.byNode[r.Node] = append(rs.byNode[r.Node], r)
	rs.nodeOf[r.Instance] = r.Node
	rs.total++
	rs.size.Store(int64(rs.total))
	if rs.nextExpiry.Load() == 0 {
		rs.nextExpiry.Store(r.ExpiresAt.UnixNano())
	}
	if found {
		// Cores first: a decision that sees the count reads the cores with it.
		rs.counts.AddCores(i, r.Cores)
		rs.counts.Add(i, 1)
	}
	return r
}

// Restore adds the reservations a judge before this one held, one per instance
// (restore.go), before the first placement: those expired by now are dropped (and told
// to changed), the others hold until their expiry, or for the TTL from now when that is
// shorter (a TTL configured shorter since), and end as any other. It returns how many
// it added.
func (rs *reservations) Restore(list []api.Reservation, now time.Time) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	list = slices.Clone(list)
	for k := range list {
		if latest := now.Add(rs.ttl); list[k].ExpiresAt.After(latest) {
			list[k].ExpiresAt = latest
		}
	}
	slices.SortFunc(list, func(a, b api.Reservation) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	added := 0
	for _, r := range list {
		if !now.Before(r.ExpiresAt) || rs.total >= maxReservations {
			rs.changed(r.Instance, nil)
			continue
		}
		rs.addLocked(r)
		added++
	}
	return added
}

// Rebase sweeps against a new snapshot (its nodes' wave.instances, and runs: whether a
// node reports running an instance) and publishes it with counts of its own, each
// reservation's work priced anew at its node's prices in s, under the mutex so that no
// reservation made meanwhile is lost.
func (rs *reservations) Rebase(s *lbplugins.Snapshot, now time.Time, runs func(node, instance string) bool, publish func(*lbplugins.Reserved)) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	counts := lbplugins.NewReserved(s)
	rs.sweepLocked(now, func(node string) (float64, bool) { return reportedInstances(s, node) }, runs)
	for node, list := range rs.byNode {
		i, ok := s.Index(node)
		if !ok {
			continue
		}
		cores := 0.0
		for k := range list {
			list[k].Cores = coresOn(s, i, list[k].Expected)
			cores += list[k].Cores
		}
		counts.AddCores(i, cores)
		counts.Add(i, int32(len(list)))
	}
	rs.snap, rs.counts = s, counts
	publish(counts)
}

// Expire drops the reservations that expired by now from the published counts.
func (rs *reservations) Expire(now time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.snap == nil {
		return
	}
	rs.sweepLocked(now, func(string) (float64, bool) { return 0, false }, nil)
}

// sweepLocked drops the reservations that expired by now, those whose node reports
// enough instances and those whose node reports running their instance (runs; nil:
// none), taking them out of the current counts.
func (rs *reservations) sweepLocked(now time.Time, reported func(node string) (float64, bool), runs func(node, instance string) bool) {
	var next int64
	for node, list := range rs.byNode {
		count, ok := reported(node)
		goneCores := 0.0
		n := len(list)
		kept := slices.DeleteFunc(list, func(r api.Reservation) bool {
			done := !now.Before(r.ExpiresAt) || (ok && r.Target > 0 && count >= r.Target) || (runs != nil && runs(node, r.Instance))
			if done {
				goneCores += r.Cores
				delete(rs.nodeOf, r.Instance)
				rs.changed(r.Instance, nil)
			}
			return done
		})
		if gone := n - len(kept); gone > 0 {
			rs.total -= gone
			if i, found := rs.index(node); found {
				rs.counts.Add(i, -int32(gone))
				rs.counts.AddCores(i, -goneCores)
			}
		}
		if len(kept) == 0 {
			delete(rs.byNode, node)
			continue
		}
		rs.byNode[node] = kept
		if e := kept[0].ExpiresAt.UnixNano(); next == 0 || e < next {
			next = e // a node's list is oldest first
		}
	}
	rs.nextExpiry.Store(next)
	rs.size.Store(int64(rs.total))
}

// Drop removes instance's reservation, if any.
func (rs *reservations) Drop(instance string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.dropLocked(instance)
}

// dropLocked removes instance's reservation, if any, from its node's list and the
// current counts.
func (rs *reservations) dropLocked(instance string) {
	node, ok := rs.nodeOf[instance]
	if !ok {
		return
	}
	delete(rs.nodeOf, instance)
	rs.changed(instance, nil)
	list := rs.byNode[node]
	k := slices.IndexFunc(list, func(r api.Reservation) bool { return r.Instance == instance })
	if k < 0 {
		return
	}
	r := list[k]
	if list = slices.Delete(list, k, k+1); len(list) == 0 {
		delete(rs.byNode, node)
	} else {
		rs.byNode[node] = list
	}
	rs.total--
	rs.size.Store(int64(rs.total))
	if i, found := rs.index(node); found {
		rs.counts.Add(i, -1)
		rs.counts.AddCores(i, -r.Cores)
	}
}

// index is node's position in the snapshot the counts belong to.
func (rs *reservations) index(node string) (int, bool) {
	if rs.snap == nil {
		return 0, false
	}
	return rs.snap.Index(node)
}

// Node returns a node's reservations pending at now, oldest first.
func (rs *reservations) Node(node string, now time.Time) []api.Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(rs.byNode[node]), func(r api.Reservation) bool { return !now.Before(r.ExpiresAt) })
}

// Pending returns every reservation pending at now, by instance.
func (rs *reservations) Pending(now time.Time) map[string]api.Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make(map[string]api.Reservation, rs.total)
	for _, list := range rs.byNode {
		for _, r := range list {
			if now.Before(r.ExpiresAt) {
				out[r.Instance] = r
			}
		}
	}
	return out
}
