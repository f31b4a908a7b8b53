package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// CheckAdd reports why inst cannot be added now: an invalid definition, an id that is
// defined already or being removed, or another instance that reads the same source with
// the same server_id. AddInstance checks it first; `instance add` calls it before it
// measures the source or asks for a placement, so that an add bound to fail costs
// nothing and says why at once.
func CheckAdd(ctx context.Context, c coord.Coordinator, inst *Instance) error {
	if err := inst.Validate(); err != nil {
		return fmt.Errorf("instance: %w", err)
	}
	if _, err := undefinedVersion(ctx, c, inst.ID); err != nil {
		return err
	}
	// An instance being removed keeps its offset until the removal ends: added now, it
	// would resume from there rather than from its new start.
	switch _, removing, err := readRemoval(ctx, c, inst.ID); {
	case err != nil:
		return err
	case removing:
		return fmt.Errorf("instance %s is being removed (or a removal of it stopped half-way): run binlake instance remove %s first", inst.ID, inst.ID)
	}
	return checkServerID(ctx, c, inst)
}

// checkServerID refuses a second reader of one source under one server_id. The source
// lets one binlog connection per server_id: each new one ends the other's (MariaDB's
// ERROR 4052, MySQL's 1236 "A slave with the same server_uuid/server_id"), so the two
// instances would take turns at reconnecting, for ever, and neither capture. Sources are
// the same when their port is and their hosts are one name (the case aside) or resolve
// to an address in common (localhost and 127.0.0.1); a real replica of the source with
// that server_id is not seen (the running instance then reports server_id_clash). Two adds
// at once are fenced by AddInstance's lock.
func checkServerID(ctx context.Context, c coord.Coordinator, inst *Instance) error {
	ids, err := ListInstances(ctx, c)
	if err != nil {
		return fmt.Errorf("list the instances to compare server_ids: %w", err)
	}
	for _, id := range ids {
		if id == inst.ID {
			continue
		}
		v, err := c.Get(ctx, InstanceKey(id))
		if errors.Is(err, coord.ErrNotFound) {
			continue // removed since the listing
		}
		if err != nil {
			return fmt.Errorf("read instance %s to compare server_ids: %w", id, err)
		}
		other, err := ParseInstance(v.Data)
		if err != nil {
			continue // no definition (an incomplete add), or one no wave can run: it takes no connection
		}
		if other.Source.ServerID == inst.Source.ServerID && SameSource(ctx, other.Source.Addr, inst.Source.Addr) {
			return fmt.Errorf("instance %s: source %s with server_id %d is read by instance %s already; "+
				"the source keeps one binlog connection per server_id, so the two would end each other's: give source.server_id a value of its own",
				inst.ID, inst.Source.Addr, inst.Source.ServerID, other.ID)
		}
	}
	return nil
}

// SameSource says whether two host:port addresses reach one server: the same port, and
// hosts of one name or resolving to an address in common. A host that does not resolve
// here (the wave's host may resolve it, this one not) compares by name only.
func SameSource(ctx context.Context, a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || !samePort(pa, pb) {
		return false
	}
	if strings.EqualFold(ha, hb) {
		return true // 3307 and 03307: one port
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ipsA, errA := net.DefaultResolver.LookupHost(rctx, ha)
	ipsB, errB := net.DefaultResolver.LookupHost(rctx, hb)
	if errA != nil || errB != nil {
		return false
	}
	for _, ip := range ipsA {
		if slices.Contains(ipsB, ip) || isLoopback(ip) && slices.ContainsFunc(ipsB, isLoopback) {
			return true
		}
	}
	return false
}

// isLoopback says whether ip is of this host's loopback (127.0.0.0/8 or ::1): a server
// on 127.0.0.1 and one on [::1] at the same port are one server as often as not (one
// listening on every address, as MariaDB and MySQL do by default), and a clash missed
// costs more than one wrongly seen: two instances ending each other's connections for
// ever, against an add refused with the reason.
func isLoopback(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Unmap().IsLoopback()
}

// samePort says whether two ports are one: as numbers, as the dialer reads them (3307
// and 03307), or as names.
func samePort(a, b string) bool {
	na, errA := strconv.ParseUint(a, 10, 16)
	nb, errB := strconv.ParseUint(b, 10, 16)
	if errA == nil && errB == nil {
		return na == nb
	}
	return a == b
}
