// Package cluster is the coordinator as the waves see it: the layout of its keys as code
// (layout.go), the instances' definitions and subscription filters, the committed
// offsets, the status records, the waves' membership, the move records, and the admin
// operations `binlake instance` runs (add, move, remove, show, snapshot requests).
package cluster

// The coordinator's layout: every key a wave, the balancer and the admin commands read or
// write, relative to the coordinator's root (docs/design.md, "Coordinator layout"). No
// other package spells one by hand.

// GroupWaves is the coordinator group the waves register in.
const GroupWaves = "waves"

// GroupStarting holds the waves waiting for their name in GroupWaves, still held by the
// session of their previous process (killed, not yet expired): the balancer does not
// take that session's end for the wave's death.
const GroupStarting = "waves-starting"

// Stopped is the parent of the waves' stop records: "waves-stopped/<node>" (StoppedKey)
// says the node's last process stopped cleanly (stops.go).
const Stopped = "waves-stopped"

// StoppedKey holds node's StopRecord while it is stopped cleanly.
func StoppedKey(node string) string { return Stopped + "/" + node }

// Instances is the parent of every instance's keys: "instances/<id>" is its definition
// (InstanceKey), its children its assignment, offset, leadership, status, last move,
// snapshot request and, while it is being removed, the removal's mark.
const Instances = "instances"

// InstanceKey is where instance id's definition is stored (JSON of Instance; empty while
// AddInstance has not completed).
func InstanceKey(id string) string { return Instances + "/" + id }

// AssignKey holds the node the instance belongs on: the balancer's and the admin
// commands' word, which the waves follow.
func AssignKey(id string) string { return instanceChild(id, "assign") }

// OffsetKey holds the committed offset (JSON of Position) where the instance resumes.
func OffsetKey(id string) string { return instanceChild(id, "offset") }

// LeaderKey is the election of the wave that captures the instance.
func LeaderKey(id string) string { return instanceChild(id, "leader") }

// StatusKey holds the status its leader recorded (JSON of RecordedStatus).
func StatusKey(id string) string { return instanceChild(id, "status") }

// MovedKey holds the record of the instance's last move (JSON of MoveRecord).
func MovedKey(id string) string { return instanceChild(id, "moved") }

// SnapshotKey holds the instance's pending snapshot request (JSON of SnapshotRequest).
func SnapshotKey(id string) string { return instanceChild(id, "snapshot") }

// RemovingKey marks an instance whose removal has begun (RemoveInstance): its definition
// is withdrawn, no wave runs it, and it cannot be added again until the removal ends.
func RemovingKey(id string) string { return instanceChild(id, "removing") }

func instanceChild(id, child string) string { return InstanceKey(id) + "/" + child }

// Coordinator keys of the balancer.
const (
	BalancerLeaderKey  = "balancer/leader"  // the election of the wave that balances
	BalancerRequestKey = "balancer/request" // a rebalance asked for (RequestRebalance)
	BalancerRunKey     = "balancer/run"     // the progress of the last rebalance run
)

// AddLockKey is the election an instance add holds while it checks and writes: two adds
// at once would each pass the other's server_id check (AddInstance).
const AddLockKey = "admin/add"
