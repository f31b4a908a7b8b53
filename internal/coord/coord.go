// Package coord is the coordination a wave and an alarm need: live membership,
// per-key leadership with fencing, and a versioned value store with compare-and-set.
//
// Two real implementations: coord/zk (go-zookeeper/zk, the distributed shape) and
// coord/single (one process that always leads, values in a file, the embedded shape).
// Both pass the conformance suite in coord/coordtest.
package coord

import (
	"context"
	"errors"
)

// Member is one live process registered under a group (for example a wave node).
type Member struct {
	ID   string
	Data []byte
}

// Value is a stored value with the version used for compare-and-set.
type Value struct {
	Data    []byte
	Version int64
}

// NoVersion asks Put to create the key: it fails with ErrVersionConflict if the key exists.
const NoVersion int64 = -1

// AnyVersion makes Put overwrite whatever version the key has.
const AnyVersion int64 = -2

// Leadership is held leadership of one key.
type Leadership interface {
	// Lost is closed when leadership is lost (session expired, connection lost
	// for longer than is safe, Resign, or Close of the coordinator). It is closed
	// before any other candidate can be elected, so a holder that stops its work
	// when Lost closes never overlaps with its successor.
	Lost() <-chan struct{}
	// Token is a fencing token that grows with each new leader of the key.
	Token() int64
	// Resign gives leadership up. It is idempotent.
	Resign(ctx context.Context) error
}

// Coordinator is the coordination service. Keys and groups are slash-separated paths
// relative to the coordinator's root, for example "instances/orders/offset" or "waves".
type Coordinator interface {
	// Register announces this process as a live member of group until ctx ends,
	// the session is lost or Close is called. Registering the same id twice is an error
	// (ErrExists) while the first one lives.
	Register(ctx context.Context, group string, m Member) error
	// Members lists the live members of group, sorted by ID.
	Members(ctx context.Context, group string) ([]Member, error)
	// WatchMembers sends the current member list of group and then every change,
	// until ctx ends. The channel is closed when the watch ends.
	WatchMembers(ctx context.Context, group string) (<-chan []Member, error)

	// Campaign blocks until this process leads key (or ctx ends). data describes the
	// leader (for example the node id) and is visible through Leader.
	Campaign(ctx context.Context, key string, data []byte) (Leadership, error)
	// Leader returns the current leader's data, or ErrNotFound when nobody leads.
	Leader(ctx context.Context, key string) ([]byte, error)

	// Get returns the value of key, or ErrNotFound.
	Get(ctx context.Context, key string) (Value, error)
	// Put writes key if its current version is version (NoVersion: create; AnyVersion:
	// unconditional) and returns the new version, or ErrVersionConflict.
	Put(ctx context.Context, key string, data []byte, version int64) (int64, error)
	// Delete removes key (and, where the implementation nests, its children) if its version
	// matches (AnyVersion: unconditional). ErrNotFound when absent.
	Delete(ctx context.Context, key string, version int64) error
	// List returns the names of the direct children of key, sorted.
	List(ctx context.Context, key string) ([]string, error)
	// WatchValue signals once at once and then whenever key may have changed (written,
	// created or deleted, by any process), until ctx ends; the channel is closed when the
	// watch ends. Signals coalesce while the receiver is busy, and one may come without a
	// change (after a reconnection, say), so the receiver reads the value again.
	WatchValue(ctx context.Context, key string) (<-chan struct{}, error)

	// Close ends the session: memberships and leaderships end. It is idempotent.
	Close() error
}

var (
	// ErrNotFound reports a missing key or leader.
	ErrNotFound = errors.New("not found")
	// ErrVersionConflict reports a compare-and-set whose version did not match.
	ErrVersionConflict = errors.New("version conflict")
	// ErrExists reports a registration or creation of something that already exists.
	ErrExists = errors.New("already exists")
	// ErrSessionLost reports that the coordinator session expired; leaderships were lost.
	ErrSessionLost = errors.New("coordinator session lost")
	// ErrClosed reports use of a closed coordinator.
	ErrClosed = errors.New("coordinator closed")
)
