package alarm

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/metric"
)

// ReplayOptions configure a Replay.
type ReplayOptions struct {
	Policies []*policy.Policy
	// EvalInterval is the engine's timer period, as the alarm's evaluation.interval: a
	// pending alert fires, keep_firing_for runs out, a series goes stale or nodata fires
	// on this grid between batches (1 s when zero).
	EvalInterval time.Duration
	// StaleIntervals is the alarm's evaluation.stale_intervals (DefaultStaleIntervals
	// when zero).
	StaleIntervals float64
	// GroupWait and GroupInterval are the alarm's notify defaults; they decide only how
	// many notifications the replay counts, not when alerts fire.
	GroupWait, GroupInterval time.Duration
	// Inhibition is the alarm's inhibition (its Config.Inhibit): whether a firing higher
	// severity mutes the notifications of lower ones on the same node.
	Inhibition Inhibition
	Logger     *slog.Logger
}

// Episode is one alert's firing in a replay: from when it fired until it resolved (zero
// ResolvedAt: still firing when the replay ended).
type Episode struct {
	Policy   string            `json:"policy"`
	Severity string            `json:"severity"`
	Node     string            `json:"node"`
	Labels   map[string]string `json:"labels"` // every label of the alert
	FiredAt  time.Time         `json:"fired_at"`
	// ResolvedAt is nil while the alert still fires at the end of the replay.
	ResolvedAt *time.Time `json:"resolved_at"`
	// Value is what the condition computed when the alert fired.
	Value float64 `json:"value"`
	// Annotations are the policy's annotations as the firing notification would carry
	// them (summary, description…).
	Annotations map[string]string `json:"annotations"`
}

// Replay runs recorded metric batches through a real Engine on the batches' own clock:
// the engine's time is each batch's ts as it is observed, and the engine's timer ticks
// every EvalInterval between them, as a live alarm's does. Nothing is sent: the
// notifications the engine decides are counted and acknowledged as if a channel had
// delivered them. It answers "when would these policies have fired and resolved on
// this history?" (`binlake alarm test`).
type Replay struct {
	e    *Engine
	step time.Duration

	clock    time.Time // the engine's time
	nextTick time.Time // zero before the first batch

	mu       sync.Mutex // OnAlert and Send run under the engine's locks and on its writer
	episodes []Episode
	open     map[string]int // fingerprint → index of its firing episode
	outbox   []notify.Message
	messages int
}

// NewReplay builds a replay of policies over batches given to Observe in time order.
func NewReplay(o ReplayOptions) (*Replay, error) {
	if len(o.Policies) == 0 {
		return nil, fmt.Errorf("replay: no policies")
	}
	if o.EvalInterval <= 0 {
		o.EvalInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &Replay{step: o.EvalInterval, open: map[string]int{}}
	r.e = NewEngine(EngineOptions{
		Policies: o.Policies, Log: &MemoryLog{}, StaleIntervals: o.StaleIntervals,
		GroupWait: o.GroupWait, GroupInterval: o.GroupInterval, Inhibition: o.Inhibition,
		// Read on the caller's goroutine only: the replay settles the engine's writer
		// after every step (settle), before the clock moves on.
		Now: func() time.Time { return r.clock }, Logger: o.Logger,
		OnAlert: r.record, Send: r.send,
	})
	// The log is empty: this only keeps to the engine's protocol.
	if _, err := r.e.Restore(context.Background()); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return r, nil
}

func (r *Replay) record(na notify.Alert) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if na.Status == notify.StatusResolved {
		if i, ok := r.open[na.Fingerprint]; ok {
			at := na.EndsAt.UTC()
			r.episodes[i].ResolvedAt = &at
			delete(r.open, na.Fingerprint)
		}
		return
	}
	r.open[na.Fingerprint] = len(r.episodes)
	r.episodes = append(r.episodes, Episode{
		Policy: na.Labels[policy.LabelAlertName], Severity: na.Labels[policy.LabelSeverity], Node: na.Labels[policy.LabelNode],
		Labels: maps.Clone(na.Labels), FiredAt: na.StartsAt.UTC(), Value: na.Value, Annotations: na.Annotations,
	})
}

// send takes the engine's notifications in place of the channels (on the engine's writer).
func (r *Replay) send(m notify.Message) {
	r.mu.Lock()
	r.outbox = append(r.outbox, m)
	r.messages++
	r.mu.Unlock()
}

// settle waits for the engine's writer and reports what it sent as delivered, as a
// channel would, so that repeats and resolved notices follow their course. After every
// step: the writer reads the engine's clock, which must not move under it, and an
// evaluation's notifications are then decided at its own time, as live. (Most steps
// leave the writer nothing to do, and then this costs a lock.)
func (r *Replay) settle() {
	for {
		r.e.Sync()
		r.mu.Lock()
		out := r.outbox
		r.outbox = nil
		r.mu.Unlock()
		if len(out) == 0 {
			return
		}
		for _, m := range out {
			r.e.Delivered(m, nil) // may give the writer work again
		}
	}
}

// Lookback is how far before the replay's range the history should be given to Warm,
// for the range's first points to be evaluated on whole windows, as a running alarm's
// are (History, Engine.Lookback); 0 when no policy looks back.
func (r *Replay) Lookback() time.Duration { return r.e.Lookback() }

// Warm adds a batch from before the replay's range to the policies' windows without
// evaluating it (Engine.Warm); it must come before the first Observe. A batch without ts
// is refused, as Observe refuses it.
func (r *Replay) Warm(b metric.Batch) error {
	if b.TS.IsZero() {
		return fmt.Errorf("replay: batch of node %q has no ts", b.Node)
	}
	if !r.nextTick.IsZero() {
		return fmt.Errorf("replay: batch of node %q at %s given to Warm after the replay began", b.Node, b.TS.UTC().Format(time.RFC3339Nano))
	}
	r.e.Warm(b)
	return nil
}

// Observe evaluates one batch at its own time, after the ticks due before it. Batches
// must come in non-decreasing ts order; a batch without ts is refused, since the
// replay's clock is the batches' time.
func (r *Replay) Observe(b metric.Batch) error {
	if b.TS.IsZero() {
		return fmt.Errorf("replay: batch of node %q has no ts", b.Node)
	}
	if b.TS.Before(r.clock) {
		return fmt.Errorf("replay: batch of node %q at %s is older than one replayed before it (%s): batches must come in time order",
			b.Node, b.TS.UTC().Format(time.RFC3339Nano), r.clock.UTC().Format(time.RFC3339Nano))
	}
	r.advance(b.TS, false)
	r.clock = b.TS
	r.e.Observe(b)
	r.settle()
	return nil
}

// advance ticks the engine on the EvalInterval grid up to to (inclusive only when
// inclusive), the grid starting at the first batch.
func (r *Replay) advance(to time.Time, inclusive bool) {
	if r.nextTick.IsZero() {
		r.nextTick = to
		if !inclusive {
			r.nextTick = to.Add(r.step)
		}
	}
	for r.nextTick.Before(to) || inclusive && r.nextTick.Equal(to) {
		r.clock = r.nextTick
		r.e.Tick()
		r.settle()
		r.nextTick = r.nextTick.Add(r.step)
	}
}

// Finish runs the engine's timer up to end (the last batch's time when zero or earlier)
// and returns the alerts' episodes by firing time, then policy, node and labels, and how
// many notifications (messages, one per group and channel) the engine would have sent.
func (r *Replay) Finish(end time.Time) (episodes []Episode, messages int) {
	if end.Before(r.clock) {
		end = r.clock
	}
	if !r.nextTick.IsZero() {
		r.advance(end, true)
	}
	r.clock = end
	r.settle()
	// Every group goes out, as a stopping alarm's do, so that the count is complete.
	r.e.Flush(time.Now().Add(10 * time.Second))
	r.settle()
	r.e.stopOps()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Episode(nil), r.episodes...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.FiredAt.Equal(b.FiredAt) {
			return a.FiredAt.Before(b.FiredAt)
		}
		if a.Policy != b.Policy {
			return a.Policy < b.Policy
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return metric.LabelSetKey(a.Labels) < metric.LabelSetKey(b.Labels)
	})
	return out, r.messages
}
