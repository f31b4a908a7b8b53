package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/coord"
)

// The instance administration of `binlake instance` (the small "tower" of BinLake): it
// reads and writes the coordinator only; the waves pick changes up by polling.

// ErrNoWave is returned when an instance needs a node and no wave is alive.
var ErrNoWave = errors.New("no live wave")

// Placer chooses the node for an instance.
type Placer interface {
	Place(ctx context.Context, instance string, exclude []string) (string, error)
}

// RandomPlacer picks a random live wave, as the original does without a judge.
type RandomPlacer struct{ Coord coord.Coordinator }

// Place implements Placer.
func (r RandomPlacer) Place(ctx context.Context, _ string, exclude []string) (string, error) {
	ms, err := r.Coord.Members(ctx, GroupWaves)
	if err != nil {
		return "", fmt.Errorf("list waves: %w", err)
	}
	var nodes []string
	for _, m := range ms {
		if !contains(exclude, m.ID) {
			nodes = append(nodes, m.ID)
		}
	}
	if len(nodes) == 0 {
		return "", ErrNoWave
	}
	return nodes[rand.IntN(len(nodes))], nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// StateIncomplete is what ShowInstance reports for an id that has an assignment but no
// definition: an add that stopped between its two writes. Adding it again completes it;
// removing it clears it.
const StateIncomplete = "incomplete"

// AddInstance stores a new instance and assigns it to node (chosen by p when node is
// empty). It fails if the instance exists, or another reads its source with its
// server_id (CheckAdd). Adds run one at a time across the cluster (lockAdds).
//
// The assignment is written before the definition: a wave that sees the definition then
// runs it where it belongs, rather than on whichever wave wins the election for an
// unassigned instance. An add that stops between the two writes leaves an assignment
// without a definition: no wave runs it (there is nothing to run), ShowInstance reports it
// as StateIncomplete, and adding the instance again completes it.
func AddInstance(ctx context.Context, c coord.Coordinator, inst *Instance, node string, p Placer) (string, error) {
	unlock, err := lockAdds(ctx, c, inst.ID)
	if err != nil {
		return "", err
	}
	defer unlock()
	// Check before writing anything, so that adding an existing instance cannot move it.
	if err := CheckAdd(ctx, c, inst); err != nil {
		return "", err
	}
	defKey, assignKey := InstanceKey(inst.ID), AssignKey(inst.ID)
	assignVersion := coord.NoVersion
	switch cur, err := c.Get(ctx, assignKey); {
	case errors.Is(err, coord.ErrNotFound):
	case err != nil:
		return "", fmt.Errorf("read assignment of %s: %w", inst.ID, err)
	default:
		assignVersion = cur.Version // left by an add that stopped before the definition
	}
	if node == "" {
		if p == nil {
			p = RandomPlacer{Coord: c}
		}
		var err error
		if node, err = p.Place(ctx, inst.ID, nil); err != nil {
			return "", err
		}
	}
	data, err := inst.Marshal()
	if err != nil {
		return "", err
	}
	// Both writes check the version read above: of two adds of the same id at once, one
	// fails instead of the two mixing a definition and an assignment.
	if _, err := c.Put(ctx, assignKey, []byte(node), assignVersion); err != nil {
		if errors.Is(err, coord.ErrVersionConflict) {
			return "", fmt.Errorf("instance %s is being added by someone else", inst.ID)
		}
		return "", fmt.Errorf("assign instance %s: %w", inst.ID, err)
	}
	// Read the definition's version again: ZooKeeper has just created its node, empty,
	// as the assignment's parent.
	defVersion, err := undefinedVersion(ctx, c, inst.ID)
	if err != nil {
		return "", err
	}
	if _, err := c.Put(ctx, defKey, data, defVersion); err != nil {
		if errors.Is(err, coord.ErrVersionConflict) || errors.Is(err, coord.ErrExists) {
			return "", fmt.Errorf("instance %s already exists", inst.ID)
		}
		return "", fmt.Errorf("store instance %s (assigned to %s; add it again to complete it): %w", inst.ID, node, err)
	}
	return node, nil
}

// undefinedVersion returns the version to write an instance's definition at: NoVersion
// when the key is absent, its version when it is empty (ZooKeeper creates it so as the
// parent of the assignment or of a status). An instance already defined is an error.
func undefinedVersion(ctx context.Context, c coord.Coordinator, id string) (int64, error) {
	cur, err := c.Get(ctx, InstanceKey(id))
	switch {
	case errors.Is(err, coord.ErrNotFound):
		return coord.NoVersion, nil
	case err != nil:
		return 0, fmt.Errorf("read instance %s: %w", id, err)
	case len(cur.Data) > 0:
		return 0, fmt.Errorf("instance %s already exists", id)
	}
	return cur.Version, nil
}

// StateRemoving is what ShowInstance reports for an instance whose removal began and has
// not ended: no wave runs it (its definition is withdrawn), and removing it again
// finishes the removal.
const StateRemoving = "removing"

// RemovalRecord is the value of RemovingKey: when the removal began.
type RemovalRecord struct {
	At time.Time `json:"at"`
}

// RemoveWait bounds how long RemoveInstance waits for the wave leading the instance to let
// it go; a live wave does at its next poll of the instances (poll_interval, 2 s), once its
// pipeline has stopped.
var RemoveWait = 20 * time.Second

// removeQuiet is how long the instance must stay without a leader before its keys go: a
// wave standing by for it takes the leadership a moment after the leader resigns.
var removeQuiet = 300 * time.Millisecond

// RemoveInstance deletes an instance with its assignment, offset and status, safely
// against the waves that run it or stand by for it:
//
//  1. It marks the instance as being removed (RemovingKey) and withdraws its definition
//     (leaves the key empty, as an add that has not completed does): no wave starts it
//     any more, and each stops its runner at its next poll.
//  2. It waits until no wave leads the instance: its leader let go, and nobody took the
//     leadership after it for a moment. A wave taking it meanwhile finds the definition
//     withdrawn and lets go at once, writing nothing (Wave.runInstance).
//  3. Only then it deletes the instance's keys, the mark last.
//
// So the waves never see the offset gone while the definition is there: the old order
// (delete everything at once) let the leader take the instance back half-way and start
// it again from the source's current end, skipping the rows in between. A removal that
// stops at any point leaves an instance that no wave runs and that ShowInstance reports
// as StateRemoving (or, past step 3, nothing): removing it again finishes it. When the
// leader does not let go within RemoveWait (or ctx's end), the error says which wave
// leads it, and nothing has been deleted.
func RemoveInstance(ctx context.Context, c coord.Coordinator, id string) error {
	def, err := c.Get(ctx, InstanceKey(id))
	switch {
	case errors.Is(err, coord.ErrNotFound):
		// No definition: an incomplete add (the single coordinator keeps no parent node)
		// or a removal that stopped half-way still leaves keys under it.
		left, lerr := c.List(ctx, InstanceKey(id))
		if lerr != nil {
			return fmt.Errorf("remove instance %s: %w", id, lerr)
		}
		if len(left) == 0 {
			return fmt.Errorf("instance %s: %w", id, coord.ErrNotFound)
		}
	case err != nil:
		return fmt.Errorf("remove instance %s: %w", id, err)
	}
	mark, _ := json.Marshal(RemovalRecord{At: time.Now().UTC()})
	if _, err := c.Put(ctx, RemovingKey(id), mark, coord.AnyVersion); err != nil {
		return fmt.Errorf("remove instance %s: mark it as being removed: %w", id, err)
	}
	if len(def.Data) > 0 {
		if _, err := c.Put(ctx, InstanceKey(id), []byte{}, coord.AnyVersion); err != nil {
			return fmt.Errorf("remove instance %s: withdraw its definition (it is marked as being removed; remove it again): %w", id, err)
		}
	}
	if err := waitUnled(ctx, c, id); err != nil {
		return err
	}
	return deleteInstance(ctx, c, id)
}

// waitUnled waits until no wave leads instance id, for removeQuiet in a row.
func waitUnled(ctx context.Context, c coord.Coordinator, id string) error {
	deadline := time.Now().Add(RemoveWait)
	var quietSince time.Time
	for {
		l, err := c.Leader(ctx, LeaderKey(id))
		switch {
		case errors.Is(err, coord.ErrNotFound):
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) >= removeQuiet {
				return nil
			}
		case err != nil:
			return fmt.Errorf("remove instance %s: its definition is withdrawn, so no wave starts it, but its leader could not be read (remove it again): %w", id, err)
		default:
			quietSince = time.Time{}
			if time.Now().After(deadline) {
				return fmt.Errorf("remove instance %s: its definition is withdrawn, so no wave starts it, but wave %s still leads it after %s "+
					"(a live wave lets go at its next poll of the instances); nothing is deleted yet: remove it again once it has", id, l, RemoveWait)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove instance %s: its definition is withdrawn, so no wave starts it, but the wait for its leader to let go ended (remove it again): %w", id, ctx.Err())
		case <-time.After(removeQuiet / 3):
		}
	}
}

// deleteInstance deletes instance id's keys, the removal's mark and the definition's key
// last; a failed delete is tried again a few times.
func deleteInstance(ctx context.Context, c coord.Coordinator, id string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("remove instance %s: partly removed, and no wave runs it: remove it again: %w", id, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if err = deleteInstanceOnce(ctx, c, id); err == nil {
			return nil
		}
	}
	return fmt.Errorf("remove instance %s: partly removed, and no wave runs it: remove it again: %w", id, err)
}

func deleteInstanceOnce(ctx context.Context, c coord.Coordinator, id string) error {
	children, err := c.List(ctx, InstanceKey(id))
	if err != nil {
		return err
	}
	for _, ch := range children {
		if ch == path.Base(RemovingKey(id)) {
			continue
		}
		if err := c.Delete(ctx, InstanceKey(id)+"/"+ch, coord.AnyVersion); err != nil && !errors.Is(err, coord.ErrNotFound) {
			return err
		}
	}
	if err := c.Delete(ctx, InstanceKey(id), coord.AnyVersion); err != nil && !errors.Is(err, coord.ErrNotFound) {
		return err
	}
	return nil
}

// readRemoval returns the removal mark of instance id; ok is false when there is none.
func readRemoval(ctx context.Context, c coord.Coordinator, id string) (rec RemovalRecord, ok bool, err error) {
	v, err := c.Get(ctx, RemovingKey(id))
	if errors.Is(err, coord.ErrNotFound) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("instance %s: %w", id, err)
	}
	_ = json.Unmarshal(v.Data, &rec) // a mark that says no time is a mark still
	return rec, true, nil
}

// MoveInstance assigns an instance to node (chosen by p, excluding the current one, when
// empty). The current leader resigns on its next poll and the new node takes over from
// the committed offset.
func MoveInstance(ctx context.Context, c coord.Coordinator, id, node string, p Placer) (string, error) {
	if _, err := c.Get(ctx, InstanceKey(id)); err != nil {
		if errors.Is(err, coord.ErrNotFound) {
			err = coord.ErrNotFound // as show and remove say it, not the key's path
		}
		return "", fmt.Errorf("instance %s: %w", id, err)
	}
	cur, _ := c.Get(ctx, AssignKey(id))
	if node != "" && node == string(cur.Data) {
		// Nothing to move: no assignment written, and no move record, which would hold
		// the instance out of the balancer's plans for a cooldown.
		return node, fmt.Errorf("instance %s: %w", id, ErrAlreadyThere)
	}
	if node == "" {
		if p == nil {
			p = RandomPlacer{Coord: c}
		}
		var err error
		if node, err = p.Place(ctx, id, []string{string(cur.Data)}); err != nil {
			return "", err
		}
	}
	if _, err := c.Put(ctx, AssignKey(id), []byte(node), coord.AnyVersion); err != nil {
		return "", fmt.Errorf("assign instance %s: %w", id, err)
	}
	// Recorded as the balancer records its own moves: the instance then cools down before
	// a plan moves it again.
	rec, _ := json.Marshal(MoveRecord{At: time.Now().UTC(), From: string(cur.Data), To: node, Reason: "manual"})
	if _, err := c.Put(ctx, MovedKey(id), rec, coord.AnyVersion); err != nil {
		return node, fmt.Errorf("instance %s assigned to %s, but its move was not recorded: %w", id, node, err)
	}
	return node, nil
}

// ErrAlreadyThere is a move to the wave the instance is assigned to already: nothing
// changes.
var ErrAlreadyThere = errors.New("already assigned there: nothing to move")

// InstanceInfo is what `binlake instance list|show` prints.
type InstanceInfo struct {
	ID       string    `json:"id"`
	Assign   string    `json:"assign"`
	Leader   string    `json:"leader"`
	State    string    `json:"state,omitempty"`
	Error    string    `json:"error,omitempty"`
	Position *Position `json:"position,omitempty"`
	LagS     *float64  `json:"lag_s,omitempty"`     // Lag, from the status record of the wave leading it
	CaughtUp bool      `json:"caught_up,omitempty"` // and whether that says caught up
	RowsPerS *float64  `json:"rows_per_s,omitempty"`
	Instance *Instance `json:"instance,omitempty"`

	// State and Error above, Reason, Since and StateNode are what the instance's leader
	// last recorded (RecordedStatus), StateNode being that leader.
	Reason    string `json:"reason,omitempty"`
	Since     string `json:"since,omitempty"`
	StateNode string `json:"state_node,omitempty"`
	// LastKnown: the wave that recorded the state is not live (a stopped `binlake up`, a
	// wave that died), or another one leads the instance now (a move under way): the
	// state is the last one known, not the current one. (A live wave that records
	// retrying holds no leadership between its attempts: its state is current.)
	LastKnown bool `json:"last_known,omitempty"`
}

// isLive reports whether node is a member of the waves group.
func isLive(ctx context.Context, c coord.Coordinator, node string) (bool, error) {
	live, err := LiveWaves(ctx, c)
	return slices.Contains(live, node), err
}

// LiveWaves lists the members of the waves group, sorted.
func LiveWaves(ctx context.Context, c coord.Coordinator) ([]string, error) {
	ms, err := c.Members(ctx, GroupWaves)
	if err != nil {
		return nil, fmt.Errorf("list waves: %w", err)
	}
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// ErrNotLive is returned by RequireLive for a wave that is not a member of the waves
// group: an instance assigned to it runs nowhere until it starts (or, after the
// balancer's failover grace, wherever the balancer or the election puts it).
var ErrNotLive = errors.New("is not live")

// RequireLive returns an ErrNotLive naming node and the live waves unless node is one.
func RequireLive(ctx context.Context, c coord.Coordinator, node string) error {
	live, err := LiveWaves(ctx, c)
	if err != nil {
		return err
	}
	if slices.Contains(live, node) {
		return nil
	}
	names := "none"
	if len(live) > 0 {
		names = strings.Join(live, ", ")
	}
	return fmt.Errorf("wave %s %w (live waves: %s)", node, ErrNotLive, names)
}

// ListInstances returns the ids of all instances, sorted.
func ListInstances(ctx context.Context, c coord.Coordinator) ([]string, error) {
	ids, err := c.List(ctx, Instances)
	if errors.Is(err, coord.ErrNotFound) {
		return nil, nil
	}
	return ids, err
}

// ShowInstance reads an instance's definition, assignment, leader, offset and status.
// With sample > 0 it reads the offset again after sample to compute rows/s (the offset
// carries the instance's row count and commit time).
func ShowInstance(ctx context.Context, c coord.Coordinator, id string, sample time.Duration, now func() time.Time) (*InstanceInfo, error) {
	v, err := c.Get(ctx, InstanceKey(id))
	if err != nil && !errors.Is(err, coord.ErrNotFound) {
		return nil, fmt.Errorf("instance %s: %w", id, err)
	}
	rm, removing, rerr := readRemoval(ctx, c, id)
	if rerr != nil {
		return nil, rerr
	}
	if removing {
		// Until the removal ends, whatever else is there is on its way out.
		info := &InstanceInfo{ID: id, State: StateRemoving, Error: fmt.Sprintf(
			"being removed since %s: no wave starts it; if no removal is under way (one stopped half-way), remove it again",
			rm.At.Format(time.RFC3339))}
		if a, err := c.Get(ctx, AssignKey(id)); err == nil {
			info.Assign = string(a.Data)
		}
		if l, err := c.Leader(ctx, LeaderKey(id)); err == nil {
			info.Leader = string(l)
		}
		return info, nil
	}
	if err != nil || len(v.Data) == 0 {
		// No definition: an add that stopped after the assignment (see AddInstance)
		// leaves only that, which no wave runs. Report it rather than hide it.
		a, aerr := c.Get(ctx, AssignKey(id))
		if errors.Is(aerr, coord.ErrNotFound) {
			return nil, fmt.Errorf("instance %s: %w", id, coord.ErrNotFound)
		}
		if aerr != nil {
			return nil, fmt.Errorf("instance %s: %w", id, aerr)
		}
		return &InstanceInfo{ID: id, Assign: string(a.Data), State: StateIncomplete,
			Error: "assigned but no definition stored (an add stopped half-way): add it again to complete it, or remove it"}, nil
	}
	info := &InstanceInfo{ID: id}
	if inst, err := ParseInstance(v.Data); err == nil {
		info.Instance = inst
	}
	if a, err := c.Get(ctx, AssignKey(id)); err == nil {
		info.Assign = string(a.Data)
	}
	if l, err := c.Leader(ctx, LeaderKey(id)); err == nil {
		info.Leader = string(l)
	}
	if s, err := c.Get(ctx, StatusKey(id)); err == nil {
		var st RecordedStatus
		if json.Unmarshal(s.Data, &st) == nil {
			info.State, info.Reason, info.Error, info.Since, info.StateNode = st.State, st.Reason, st.Error, st.Since, st.Node
			live, err := isLive(ctx, c, st.Node)
			if err != nil {
				return nil, err
			}
			info.LastKnown = !live || (info.Leader != "" && info.Leader != st.Node)
			info.LagS, info.CaughtUp = recordedLag(st, info.Leader, now())
		}
	}
	p1, _, ok, err := ReadOffset(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return info, nil
	}
	info.Position = &p1
	if sample > 0 {
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(sample):
		}
		p2, _, ok, err := ReadOffset(ctx, c, id)
		if err == nil && ok && p2.At > p1.At {
			r := float64(p2.Rows-p1.Rows) / (float64(p2.At-p1.At) / 1000)
			info.RowsPerS = &r
			info.Position = &p2
		} else if err == nil && ok {
			zero := 0.0
			info.RowsPerS = &zero
		}
	}
	return info, nil
}
