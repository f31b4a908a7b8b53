package judge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/backoff"
	"github.com/binlake/binlake/judge/store"
)

// recordLinger is how long the writer of records waits after a write before the next:
// the changes of that time go in one write, whose commit costs more than its records
// (most of the writer's CPU when a write followed every few placements, which took a
// third of the placement benchmark's req/s). A crash loses at most that much more.
const recordLinger = 100 * time.Millisecond

// recordMirror keeps the judge's records (store.Record: its pending reservations and
// the intervals its nodes declared) in its store, so that a restarted judge has them
// again (restore.go). It writes in the background, so that no placement and no batch
// waits for the store: each write takes the newest change of every record since the
// last one, and a burst of placements costs one write.
// A failed write is retried with the store buffer's back-off, except for the records
// that changed again meanwhile.
// Close writes what is left within the buffer's close timeout: a judge that is stopped
// (a deploy, a restart) keeps every record; one that crashes loses the changes not yet
// written, those of its last recordLinger or so.
type recordMirror struct {
	st   store.Store
	opts store.BufferOptions // WriteTimeout, CloseTimeout and the back-off
	log  *slog.Logger

	mu      sync.Mutex
	pending map[recordID]store.Record // the newest change of each record not yet written

	wake      chan struct{} // a change is pending
	done      chan struct{} // closed by Close
	life      context.Context
	stopLife  context.CancelFunc // called by Close after CloseTimeout
	exited    chan struct{}      // closed when the writer has returned
	closeOnce sync.Once
}

type recordID struct{ kind, key string }

// newRecordMirror starts the writer of records into st; opts are defaulted.
func newRecordMirror(st store.Store, opts store.BufferOptions, log *slog.Logger) *recordMirror {
	m := &recordMirror{
		st: st, opts: opts.WithDefaults(), log: log.With("component", "records"),
		pending: map[recordID]store.Record{},
		wake:    make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{}),
	}
	m.life, m.stopLife = context.WithCancel(context.Background())
	go m.run()
	return m
}

// put queues a change of a record: its new value, or its deletion (an empty Value).
// Only the newest change of a record is written.
func (m *recordMirror) put(r store.Record) {
	m.mu.Lock()
	m.pending[recordID{r.Kind, r.Key}] = r
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// take empties the pending changes.
func (m *recordMirror) take() []store.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.Record, 0, len(m.pending))
	for _, r := range m.pending {
		out = append(out, r)
	}
	clear(m.pending)
	return out
}

// giveBack returns the changes of a failed write to the pending ones, but for records
// changed since, whose newer change wins.
func (m *recordMirror) giveBack(recs []store.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		id := recordID{r.Kind, r.Key}
		if _, newer := m.pending[id]; !newer {
			m.pending[id] = r
		}
	}
}

func (m *recordMirror) run() {
	defer close(m.exited)
	done := m.done // nil once closing: then the writer returns when nothing is pending
	retry := backoff.Schedule(m.opts.MinBackoff, m.opts.MaxBackoff)
	failures := 0
	for {
		if recs := m.take(); len(recs) > 0 {
			ctx, cancel := context.WithTimeout(m.life, m.opts.WriteTimeout)
			err := m.st.WriteRecords(ctx, recs)
			cancel()
			switch {
			case err == nil:
				failures = 0
				if done != nil {
					t := time.NewTimer(recordLinger)
					select {
					case <-t.C:
					case <-done:
						done = nil
					}
					t.Stop()
				}
				continue
			case errors.Is(err, store.ErrInvalid):
				// The judge's own ids within the store's limits: a retry cannot help.
				m.log.Warn("the store refused records; they are not kept", "records", len(recs), "err", err)
				continue
			case m.life.Err() != nil:
				m.log.Warn("records not written before stopping: a restarted judge misses these changes", "records", len(recs)+len(m.take()), "err", err)
				return
			}
			m.giveBack(recs)
			failures++
			wait := retry(failures)
			if failures == 1 || failures%10 == 0 {
				m.log.Warn("writing records failed, retrying", "records", len(recs), "attempt", failures, "retry_in", wait, "err", err)
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-done:
				done = nil
			case <-m.life.Done():
			}
			t.Stop()
			continue
		}
		if done == nil {
			return
		}
		select {
		case <-m.wake:
		case <-done:
			done = nil
		}
	}
}

// Close writes the pending changes, for up to CloseTimeout, and stops the writer. It is
// idempotent.
func (m *recordMirror) Close() {
	m.closeOnce.Do(func() {
		close(m.done)
		t := time.NewTimer(m.opts.CloseTimeout)
		select {
		case <-m.exited:
		case <-t.C:
			m.stopLife() // cancels the write in flight: the writer gives up
			<-m.exited
		}
		t.Stop()
		m.stopLife()
	})
	<-m.exited
}
