package alarm

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/binlake/binlake/internal/coord"
)

// MemoryLog is a NotificationLog in memory, for one process that need not survive a
// restart: a replay of history (Replay), where nothing is really sent and a file or
// ZooKeeper round trip per alert would only slow it down.
type MemoryLog struct {
	mu      sync.Mutex
	entries map[string]memEntry
}

type memEntry struct {
	e       LogEntry
	version int64
}

var _ NotificationLog = (*MemoryLog)(nil)

// Load implements NotificationLog.
func (l *MemoryLog) Load(context.Context) ([]LogEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LogEntry, 0, len(l.entries))
	for _, me := range l.entries {
		out = append(out, me.e)
	}
	return out, nil
}

// Save implements NotificationLog.
func (l *MemoryLog) Save(ctx context.Context, e LogEntry) error {
	return l.Put(ctx, e, coord.AnyVersion)
}

// Put implements NotificationLog, with the coordinator's version rules.
func (l *MemoryLog) Put(_ context.Context, e LogEntry, version int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.entries[e.Fingerprint]
	switch {
	case version == coord.AnyVersion:
	case version == coord.NoVersion && ok, version >= 0 && (!ok || cur.version != version):
		return fmt.Errorf("notification log: save %s: %w", e.Fingerprint, coord.ErrVersionConflict)
	}
	if l.entries == nil {
		l.entries = map[string]memEntry{}
	}
	e.Labels = maps.Clone(e.Labels)
	l.entries[e.Fingerprint] = memEntry{e: e, version: cur.version + 1}
	return nil
}

// Get implements NotificationLog.
func (l *MemoryLog) Get(_ context.Context, fp string) (LogEntry, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	me, ok := l.entries[fp]
	if !ok {
		return LogEntry{}, 0, fmt.Errorf("notification log: get %s: %w", fp, coord.ErrNotFound)
	}
	return me.e, me.version, nil
}

// Remove implements NotificationLog.
func (l *MemoryLog) Remove(_ context.Context, fp string, version int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	me, ok := l.entries[fp]
	if !ok {
		return nil
	}
	if version != coord.AnyVersion && me.version != version {
		return fmt.Errorf("notification log: remove %s: %w", fp, coord.ErrVersionConflict)
	}
	delete(l.entries, fp)
	return nil
}
