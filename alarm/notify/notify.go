// Package notify delivers alarm notifications to channels: an Alertmanager-compatible
// webhook, Alertmanager's own v2 API, DingTalk, WeCom and Slack robots, email over SMTP,
// and the log. A Dispatcher gives every channel its own queue and goroutine with retries
// and back-off, so one failing channel never holds back another.
package notify

import (
	"github.com/binlake/binlake/internal/backoff"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Alert statuses.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Alert is one alert in a notification, in Alertmanager's terms.
type Alert struct {
	Status      string
	Labels      map[string]string
	Annotations map[string]string
	StartsAt    time.Time
	EndsAt      time.Time // zero while firing
	Value       float64
	Fingerprint string
}

// Message is one notification: the alerts of one group (by default a policy's; see
// policy.Policy.Group).
type Message struct {
	// Receiver is the channel's name.
	Receiver string
	// GroupKey identifies the group: "policy/P1", then {label="value", …} of the
	// policy's group_by labels when it sets group_by.
	GroupKey string
	// GroupLabels are the group_by labels' values (alertname and severity by default).
	GroupLabels map[string]string
	Alerts      []Alert
	// ExternalURL is where the alarm's API can be reached, for links.
	ExternalURL string
}

// Status is "firing" when any alert fires, else "resolved".
func (m Message) Status() string {
	for _, a := range m.Alerts {
		if a.Status == StatusFiring {
			return StatusFiring
		}
	}
	return StatusResolved
}

// CommonLabels are the labels every alert of the message shares.
func (m Message) CommonLabels() map[string]string {
	return common(m.Alerts, func(a Alert) map[string]string { return a.Labels })
}

// CommonAnnotations are the annotations every alert of the message shares.
func (m Message) CommonAnnotations() map[string]string {
	return common(m.Alerts, func(a Alert) map[string]string { return a.Annotations })
}

func common(as []Alert, f func(Alert) map[string]string) map[string]string {
	out := map[string]string{}
	if len(as) == 0 {
		return out
	}
	for k, v := range f(as[0]) {
		out[k] = v
	}
	for _, a := range as[1:] {
		m := f(a)
		for k, v := range out {
			if m[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// Notifier sends one message to one channel.
type Notifier interface {
	// Notify delivers m or returns why it could not. Errors wrapping ErrPermanent are not
	// retried (a 4xx answer: the request will never succeed).
	Notify(ctx context.Context, m Message) error
}

// ErrPermanent marks a failure that retrying cannot fix.
var ErrPermanent = errors.New("permanent failure")

// Text renders a message as plain text for chat robots and email: one line per alert with
// its summary, or its labels when it has none.
func Text(m Message, markdown bool) (title, body string) {
	firing, resolved := 0, 0
	for _, a := range m.Alerts {
		if a.Status == StatusFiring {
			firing++
		} else {
			resolved++
		}
	}
	// A group's alerts are of one policy, so they share alertname and severity even when
	// the policy's group_by leaves them out of the group labels.
	common := m.CommonLabels()
	title = fmt.Sprintf("[%s] %s %s", strings.ToUpper(m.Status()), common["severity"], common["alertname"])
	if firing > 0 && resolved > 0 {
		title += fmt.Sprintf(" (%d firing, %d resolved)", firing, resolved)
	} else if len(m.Alerts) > 1 {
		title += fmt.Sprintf(" (%d alerts)", len(m.Alerts))
	}
	var b strings.Builder
	if markdown {
		b.WriteString("### " + title + "\n\n")
	} else {
		b.WriteString(title + "\n\n")
	}
	for _, a := range m.Alerts {
		line := a.Annotations["summary"]
		if line == "" {
			line = labelString(a.Labels)
		}
		prefix := "- "
		if markdown && a.Status == StatusFiring {
			prefix = "- **FIRING** "
		} else if markdown {
			prefix = "- RESOLVED "
		} else {
			prefix = "- " + strings.ToUpper(a.Status) + " "
		}
		fmt.Fprintf(&b, "%s%s (node %s, value %g, since %s)\n", prefix, line, a.Labels["node"], a.Value, a.StartsAt.UTC().Format(time.RFC3339))
		if d := a.Annotations["description"]; d != "" {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	return title, b.String()
}

func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// DispatcherOptions configures a Dispatcher.
type DispatcherOptions struct {
	// Queue is each channel's queue length (256 when zero). A message for a full queue is
	// dropped and counted rather than blocking the evaluation.
	Queue int
	// Attempts is how often a message is tried (4 when zero); Backoff the first wait
	// between attempts (1 s when zero), doubled each time up to MaxBackoff (1 min).
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Timeout bounds one attempt (10 s when zero).
	Timeout time.Duration
	Logger  *slog.Logger
	// Registerer receives the counters; none when nil.
	Registerer prometheus.Registerer
	// Done, when set, is told each message's outcome once the dispatcher is finished
	// with it: nil when delivered, else the last error (or why it was dropped).
	Done func(m Message, err error)
	// Prepare, when set, sees each message when its turn comes on its channel, after
	// the messages queued before it there are finished, and returns what to send of it
	// (nothing when send is false: Done is not told then). The alarm withholds there a
	// resolution whose page that channel gave up.
	Prepare func(m Message) (out Message, send bool)
}

// Dispatcher owns one queue and one worker per channel.
type Dispatcher struct {
	o      DispatcherOptions
	log    *slog.Logger
	chans  map[string]*worker
	sent   *prometheus.CounterVec
	failed *prometheus.CounterVec
	retry  *prometheus.CounterVec
	drop   *prometheus.CounterVec
	// failing is 1 while a channel's last notification was given up, 0 once one is
	// delivered: a failure followed by a delivery (the owed page sent again) is over.
	failing *prometheus.GaugeVec

	startOnce, closeOnce sync.Once
	cancel               context.CancelFunc
	wg                   sync.WaitGroup
	givenUp              atomic.Int64 // messages Close cut short
}

type worker struct {
	name string
	n    Notifier
	q    chan Message
}

// NewDispatcher builds a dispatcher over named notifiers. Nothing is sent until Start.
func NewDispatcher(channels map[string]Notifier, o DispatcherOptions) (*Dispatcher, error) {
	if o.Queue <= 0 {
		o.Queue = 256
	}
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	d := &Dispatcher{o: o, log: o.Logger.With("component", "notify"), chans: map[string]*worker{}}
	const ns, sub = "binlake", "alarm"
	d.sent = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "notifications_sent_total",
		Help: "Notifications delivered, by channel."}, []string{"channel"})
	d.failed = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "notifications_failed_total",
		Help: "Notifications given up after every attempt failed, by channel."}, []string{"channel"})
	d.retry = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "notification_attempts_failed_total",
		Help: "Failed delivery attempts (each retry counts), by channel."}, []string{"channel"})
	d.drop = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "notifications_dropped_total",
		Help: "Notifications dropped because the channel's queue was full, by channel."}, []string{"channel"})
	d.failing = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "channel_failing",
		Help: "1 while the channel's last notification was given up after every attempt (what the alarm owes is sent again after its claim's lease), 0 once one is delivered."}, []string{"channel"})
	for name, n := range channels {
		if n == nil {
			return nil, fmt.Errorf("notify: channel %q has no notifier", name)
		}
		d.chans[name] = &worker{name: name, n: n, q: make(chan Message, o.Queue)}
		for _, c := range []*prometheus.CounterVec{d.sent, d.failed, d.retry, d.drop} {
			c.WithLabelValues(name) // exported at zero from the start
		}
		d.failing.WithLabelValues(name).Set(0)
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{d.sent, d.failed, d.retry, d.drop, d.failing} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("notify: metrics: %w", err)
			}
		}
	}
	return d, nil
}

// Refreshers returns the channels that want their firing alerts sent again on a
// schedule (Refresher), by name.
func (d *Dispatcher) Refreshers() map[string]Refresher {
	out := map[string]Refresher{}
	for name, w := range d.chans {
		if r, ok := w.n.(Refresher); ok {
			out[name] = r
		}
	}
	return out
}

// Start runs the workers until Close.
func (d *Dispatcher) Start() {
	d.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		d.cancel = cancel
		for _, w := range d.chans {
			d.wg.Add(1)
			go func() { defer d.wg.Done(); d.run(ctx, w) }()
		}
	})
}

// Enqueue queues m for its channel (m.Receiver) without waiting. It returns false when
// the channel is unknown or its queue is full (the message is dropped and counted).
func (d *Dispatcher) Enqueue(m Message) bool {
	w, ok := d.chans[m.Receiver]
	if !ok {
		return false
	}
	select {
	case w.q <- m:
		return true
	default:
		d.drop.WithLabelValues(w.name).Inc()
		d.log.Warn("notification queue full; message dropped", "channel", w.name, "group", m.GroupKey)
		d.done(m, errors.New("queue full"))
		return false
	}
}

// Close stops the workers after they drained what is queued, within drain; messages
// still queued after that are given up (reported to Done with an error). It returns how
// many were given up; it is idempotent (a second call returns 0).
func (d *Dispatcher) Close(drain time.Duration) (undelivered int) {
	d.closeOnce.Do(func() {
		if d.cancel == nil {
			return
		}
		for _, w := range d.chans {
			close(w.q)
		}
		done := make(chan struct{})
		go func() { d.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(drain):
			d.cancel()
			<-done
		}
		d.cancel()
		undelivered = int(d.givenUp.Load())
	})
	return undelivered
}

func (d *Dispatcher) run(ctx context.Context, w *worker) {
	for m := range w.q {
		if d.o.Prepare != nil {
			var send bool
			if m, send = d.o.Prepare(m); !send {
				continue
			}
		}
		d.deliver(ctx, w, m)
	}
}

func (d *Dispatcher) deliver(ctx context.Context, w *worker, m Message) {
	bo := backoff.New(d.o.Backoff, d.o.MaxBackoff)
	var err error
	for attempt := 1; attempt <= d.o.Attempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, d.o.Timeout)
		err = w.n.Notify(actx, m)
		cancel()
		if err == nil {
			d.sent.WithLabelValues(w.name).Inc()
			d.failing.WithLabelValues(w.name).Set(0)
			d.log.Debug("notification sent", "channel", w.name, "group", m.GroupKey, "alerts", len(m.Alerts), "status", m.Status())
			d.done(m, nil)
			return
		}
		d.retry.WithLabelValues(w.name).Inc()
		if errors.Is(err, ErrPermanent) || attempt == d.o.Attempts || ctx.Err() != nil {
			break
		}
		wait := bo.NextBackOff()
		d.log.Debug("notification attempt failed; retrying", "channel", w.name, "attempt", attempt, "in", wait, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	d.failed.WithLabelValues(w.name).Inc()
	d.failing.WithLabelValues(w.name).Set(1)
	if ctx.Err() != nil {
		d.givenUp.Add(1) // cut short by Close
	}
	d.log.Warn("notification failed", "channel", w.name, "group", m.GroupKey, "alerts", len(m.Alerts), "err", err)
	d.done(m, err)
}

func (d *Dispatcher) done(m Message, err error) {
	if d.o.Done != nil {
		d.o.Done(m, err)
	}
}
