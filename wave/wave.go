// Package wave is the capture role: it acts as a MySQL/MariaDB replica, turns row events
// into row messages (docs/design.md) and publishes them to a bus with at-least-once delivery.
//
// A Wave registers itself under "waves/<node>", polls the instances in the coordinator,
// and for each instance it should run (assigned to it, unassigned, or assigned to a node
// that has not been alive for the failover grace) campaigns for "instances/<id>/leader".
// One wave, elected, is also the cluster's balancer (wave/balancer): it reassigns a dead
// wave's instances and applies rebalancing plans. While it leads, one pipeline
// runs: binlog reader → decoder/filter/encoder → batching publisher → offset committer,
// connected by bounded channels. The offset ("instances/<id>/offset") is written with a
// version check and only at transaction boundaries whose every earlier message the sink
// acknowledged; when the leadership is lost, the pipeline stops before anything else.
//
// The flow across the packages: wave/capture reads the source's binlog, wave/rowenc
// turns each row into its message, this package publishes, commits and runs it all
// (Run), wave/cluster holds what the coordinator stores, and wave/balancer moves
// instances between waves.
package wave

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/logging"
	"github.com/binlake/binlake/wave/balancer"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// TopicCreator creates topics; bus.Bus implements it. Sinks without topics (the file
// sink) leave it nil.
type TopicCreator interface {
	CreateTopic(ctx context.Context, spec bus.TopicSpec) error
}

// PipelineOptions tunes the per-instance pipeline. Zero fields take the defaults named.
type PipelineOptions struct {
	// BatchRows is the most row messages per publish call. 5000.
	BatchRows int
	// QueueItems bounds the queue between decoding and publishing, in rows events. 256.
	QueueItems int
	// EventQueue bounds go-mysql's queue of parsed binlog events. 256.
	EventQueue int
	// CommitInterval is how often the acknowledged position is committed. 500 ms.
	CommitInterval time.Duration
	// PublishBackoffMax caps the pause between publish retries. 5 s.
	PublishBackoffMax time.Duration
	// ReconnectBackoffMax caps the pause between source reconnects, and between the terms
	// of an instance whose pipeline keeps failing (a login refused, a secret missing). 10 s.
	ReconnectBackoffMax time.Duration
	// Heartbeat is the source heartbeat period asked for; a silent connection is
	// dropped and reopened after 3 of them. 2 s.
	Heartbeat time.Duration
	// RetryBackoff is the pause before a wave campaigns again after a pipeline error,
	// doubled at each error in a row up to ReconnectBackoffMax. 2 s.
	RetryBackoff time.Duration
	// PublishChunkMessages and PublishChunkBytes bound each topic's share of one
	// publish call; 0 = unbounded. Set them to the Kafka writer's batch size and batch
	// bytes so that a call is at most one produce request per partition, which keeps
	// each key's changes in order across a retried partial failure (see chunks).
	PublishChunkMessages int
	PublishChunkBytes    int64
	// PublishInFlight is how many gathered batches may be on their way to the bus at
	// once, each partition still receiving its requests one at a time. 4.
	PublishInFlight int
	// PublishLinger is how long a gathered batch that is not full waits for more rows
	// once the capture has none to give (sink.kafka.linger: the broker pays for each
	// produce request, a request per partition per batch, whatever its size); 0 sends
	// at once.
	PublishLinger time.Duration
	// XAHoldBytes bounds the row messages each instance holds for its prepared XA
	// transactions until their XA COMMIT (wave/capture/xa.go); past it, the instance's
	// on_unreadable decides. 64 MiB.
	XAHoldBytes int
}

// Options configures a Wave.
type Options struct {
	// Node is this wave's id: its member name and what it writes as leader.
	Node string
	// HTTPAddr is where /metrics, /healthz and /status listen; empty for none.
	HTTPAddr string
	// AdvertiseAddr is the HTTP address written in the member data; the bound HTTPAddr
	// when empty.
	AdvertiseAddr string

	Coord coord.Coordinator
	// Publisher is shared by every instance's pipeline; NewPublisher, when set, is used
	// instead: each leadership term opens its own publisher and closes it when the term
	// ends, so nothing a lost term left queued is sent together with a later term's
	// writes (the Kafka sink uses it; see Config.KafkaWriteTimeout for the bound on how
	// long a lost term can still write).
	Publisher    bus.Publisher
	NewPublisher func() (bus.Publisher, error)
	// Topics, when set, creates each subscription's topic (with TopicSpec) before
	// capture starts.
	Topics    TopicCreator
	TopicSpec bus.TopicSpec
	// MaxMessageBytes is the largest row message (key + value) the sink accepts; larger
	// ones follow the instance's on_too_large. 0 = no limit.
	MaxMessageBytes int

	Pipeline PipelineOptions
	// Balancer is the wave's part in balancing the cluster (wave/balancer).
	Balancer balancer.Options
	// PollInterval is how often the instance list is read. 2 s.
	PollInterval time.Duration
	// Password returns a source's password; by default SourcePassword: from
	// source.password_env or source.password_file, empty when neither is set.
	Password func(cluster.Source) (config.Secret, error)
	Logger   *slog.Logger
	// Ready, when set, is called with the bound HTTP address once the wave serves.
	Ready func(httpAddr string)
}

func (o *Options) setDefaults() error {
	if o.Node == "" {
		return errors.New("wave: node is required")
	}
	if o.Coord == nil || (o.Publisher == nil && o.NewPublisher == nil) {
		return errors.New("wave: a coordinator and a publisher are required")
	}
	p := &o.Pipeline
	// A zero or negative setting takes the default.
	p.BatchRows = cmp.Or(max(p.BatchRows, 0), 5000)
	p.QueueItems = cmp.Or(max(p.QueueItems, 0), 256)
	p.EventQueue = cmp.Or(max(p.EventQueue, 0), 256)
	p.PublishInFlight = cmp.Or(max(p.PublishInFlight, 0), DefaultPublishInFlight)
	p.CommitInterval = cmp.Or(max(p.CommitInterval, 0), 500*time.Millisecond)
	p.PublishBackoffMax = cmp.Or(max(p.PublishBackoffMax, 0), 5*time.Second)
	p.ReconnectBackoffMax = cmp.Or(max(p.ReconnectBackoffMax, 0), 10*time.Second)
	p.Heartbeat = cmp.Or(max(p.Heartbeat, 0), 2*time.Second)
	p.RetryBackoff = cmp.Or(max(p.RetryBackoff, 0), 2*time.Second)
	p.XAHoldBytes = cmp.Or(max(p.XAHoldBytes, 0), capture.DefaultXAHoldBytes)
	o.PollInterval = cmp.Or(max(o.PollInterval, 0), 2*time.Second)
	o.Balancer.SetDefaults()
	if o.Password == nil {
		o.Password = SourcePassword
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// InstanceStatus is what the wave knows of one instance it runs or stands by for.
// Position is the last offset committed, where the instance would resume (the term's
// starting point until its first commit).
type InstanceStatus struct {
	ID       string           `json:"id"`
	State    string           `json:"state"`
	Error    string           `json:"error,omitempty"`
	Reason   string           `json:"reason,omitempty"` // Reason(error): the error's class
	Position cluster.Position `json:"position"`
	Since    string           `json:"since"`
	// LagS is the instance's lag (Lag, as binlake_wave_lag_seconds) while it runs or
	// reconnects, once known: the balancer waits for it to fall under its bound after a
	// move.
	LagS *float64 `json:"lag_s,omitempty"`
}

// fail sets a state that is not running, with its error.
func (s *InstanceStatus) fail(state string, err error) {
	s.State, s.Error, s.Reason = state, err.Error(), Reason(err)
}

// Wave is one capture node.
type Wave struct {
	opts Options
	log  *slog.Logger
	m    *metrics

	mu     sync.Mutex
	status map[string]*InstanceStatus
	// inherited is, per instance, the trouble its status record named when this wave's
	// term began (carrySince), kept until the instance runs or the term ends.
	inherited map[string]cluster.RecordedStatus
	runners   map[string]*runner
	// members is the waves' membership as this wave watches it (set before registered
	// is closed): the election fallback and the balancer tell dead waves from it.
	members *cluster.Members
	bal     *balancer.Balancer
	// recordMu orders the writes of the instances' status records and guards records,
	// the record last written of each instance (putStatus).
	recordMu sync.Mutex
	records  map[string]cluster.RecordedStatus

	// lookedOnce: the first reconcile said what the wave found to run (reconcile).
	lookedOnce bool
	closed     bool
	started    bool
	stop       context.CancelFunc
	done       chan struct{}
	// registered is closed once the wave is a member of the waves group.
	registered chan struct{}
}

// New builds a wave; Run starts it.
func New(opts Options) (*Wave, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	w := &Wave{
		opts:       opts,
		log:        opts.Logger.With("component", "wave", "node", opts.Node),
		m:          newMetrics(),
		status:     map[string]*InstanceStatus{},
		inherited:  map[string]cluster.RecordedStatus{},
		records:    map[string]cluster.RecordedStatus{},
		runners:    map[string]*runner{},
		members:    cluster.NewMembers(time.Now()), // Run starts its own at the watch's start
		done:       make(chan struct{}),
		registered: make(chan struct{}),
	}
	// The balancer's lines carry a component of their own, once: a logger deriving
	// from w.log would say component=wave … component=balancer.
	balLog := opts.Logger.With("component", "wave.balancer", "node", opts.Node)
	w.bal = balancer.New(balancer.Env{Coord: opts.Coord, Node: opts.Node, Log: balLog,
		PollInterval: opts.PollInterval, RetryBackoff: opts.Pipeline.RetryBackoff}, opts.Balancer, w.m.balancer)
	return w, nil
}

// Run runs the wave until ctx ends or Close is called.
func Run(ctx context.Context, opts Options) error {
	w, err := New(opts)
	if err != nil {
		return err
	}
	defer w.Close()
	return w.Run(ctx)
}

// Published is how many row messages of instance id the sink has acknowledged since
// this wave started (its binlake_wave_rows_published_total).
func (w *Wave) Published(id string) int64 {
	var m dto.Metric
	if err := w.m.rows.WithLabelValues(id).Write(&m); err != nil {
		return 0
	}
	return int64(m.GetCounter().GetValue())
}

// Handler serves /metrics, /healthz and /status.
func (w *Wave) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"status":"ok","node":%q,"version":%q}`+"\n", w.opts.Node, buildinfo.String())
	})
	mux.HandleFunc("GET /status", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]any{"node": w.opts.Node, "instances": w.Status(), "balancer": w.bal.Status()})
	})
	return mux
}

// Status lists the instances this wave runs or stands by for, sorted by id.
func (w *Wave) Status() []InstanceStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]InstanceStatus, 0, len(w.status))
	for _, s := range w.status {
		st := *s
		if l := w.m.lag.tracker(st.ID); cluster.HasLag(st.State) && l != nil {
			if ls := l.State(); ls.Known() {
				lag := cluster.Lag(ls, time.Now())
				st.LagS = &lag
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (w *Wave) setStatus(id string, f func(*InstanceStatus)) {
	w.mu.Lock()
	s := w.status[id]
	if s == nil {
		s = &InstanceStatus{ID: id}
		w.status[id] = s
	}
	before := *s
	f(s)
	if s.State != before.State || s.Reason != before.Reason {
		// The state and its reason began then: `instance list` shows them side by side, and
		// a reason that changed during one outage read as if it had held since its start
		// (an outside trial).
		s.Since = time.Now().UTC().Format(time.RFC3339)
	}
	st := *s
	w.mu.Unlock()
	switch {
	case st.State == cluster.StateRunning || st.State == cluster.StateStandby:
		w.mu.Lock()
		delete(w.inherited, id)
		w.mu.Unlock()
	default:
		if before.State == "" || before.State == cluster.StateStandby {
			w.inherit(id) // before this term's first record replaces it
		}
		if st.State != before.State || st.Reason != before.Reason {
			st.Since = w.carrySince(id, st)
		}
	}
	if st.State == cluster.StateError {
		w.m.instError.WithLabelValues(id).Set(1)
	} else {
		w.m.instError.WithLabelValues(id).Set(0)
	}
	w.m.setState(st)
	changed := st.State != before.State || st.Reason != before.Reason || st.Error != before.Error
	if changed && st.State != cluster.StateStandby {
		w.recordStatus(id, st)
	}
}

// inherit keeps the trouble instance id's status record names as this wave's term for it
// begins (written by the process before, or the wave that led it): the outage it is in.
func (w *Wave) inherit(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := w.opts.Coord.Get(ctx, cluster.StatusKey(id))
	var rec cluster.RecordedStatus
	if err != nil || json.Unmarshal(v.Data, &rec) != nil {
		return
	}
	switch rec.State {
	case cluster.StateRunning, cluster.StateStarting, cluster.StateStandby, "":
		return
	}
	if t, err := time.Parse(time.RFC3339, rec.Since); err != nil || !t.Before(time.Now()) {
		return
	}
	w.mu.Lock()
	w.inherited[id] = rec
	w.mu.Unlock()
}

// carrySince is the since of st, a change of instance id's state or reason: the
// inherited record's when it is the same state for the same reason and the instance has
// not run in this term, as the outage began before this wave took the instance over (a
// restart during an outage showed the new process's start, and a term passes through
// starting before its trouble shows again); st's own otherwise.
func (w *Wave) carrySince(id string, st InstanceStatus) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec, ok := w.inherited[id]
	if !ok || rec.State != st.State || rec.Reason != st.Reason {
		return st.Since
	}
	if s := w.status[id]; s != nil && s.State == st.State && s.Reason == st.Reason && s.Since == st.Since {
		s.Since = rec.Since
		return rec.Since
	}
	return st.Since
}

// recordStatus writes a state of the instance's leader (running, reconnecting, retrying
// or error: standby is no state of the instance's, and would hide the leader's) to
// instances/<id>/status, where `binlake instance list|show` read it on any host.
func (w *Wave) recordStatus(id string, st InstanceStatus) {
	w.putStatus(id, &cluster.RecordedStatus{Node: w.opts.Node, State: st.State, Reason: st.Reason, Error: st.Error, Since: st.Since})
}

// Run registers the wave, serves HTTP and runs instances until ctx ends or Close.
func (w *Wave) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	switch {
	case w.started:
		w.mu.Unlock()
		return errors.New("wave: Run called twice")
	case w.closed:
		w.mu.Unlock()
		return nil
	}
	w.started, w.stop = true, cancel
	w.mu.Unlock()
	defer close(w.done)

	// The HTTP endpoint and the instances run as one group: a wave whose /metrics and
	// /status stopped serving stops too, with the reason, rather than run unobserved.
	g, gctx := errgroup.WithContext(ctx)
	var httpAddr string
	if w.opts.HTTPAddr != "" {
		ln, err := net.Listen("tcp", w.opts.HTTPAddr)
		if err != nil {
			return fmt.Errorf("wave: listen on %s: %w", w.opts.HTTPAddr, err)
		}
		httpAddr = ln.Addr().String()
		g.Go(func() error { return httpapi.Serve(gctx, ln, w.Handler(), "wave HTTP", w.log, nil) })
	}
	g.Go(func() error { return w.runInstances(gctx, ctx, httpAddr) })
	g.Go(func() error {
		// The balancer needs this wave registered and its membership watched.
		select {
		case <-w.registered:
			w.bal.Run(gctx, w.members)
		case <-gctx.Done(): // stopped, or failed, before
		}
		return nil
	})
	stopping := logging.OnStop(gctx, w.log, "wave stopping")
	err := g.Wait()
	stopping()
	// Its instances' captures have ended and their leadership is released by now.
	if err != nil {
		w.log.Info("wave stopped", "err", err)
	} else {
		w.log.Info("wave stopped")
	}
	return err
}

// runInstances registers the wave and runs the instances it should until ctx ends; the
// end of asked is a stop asked for (not a failure of the wave's group). The wave's name is
// held until its instances have stopped, and a stop asked for is recorded before
// (cluster.StopRecord): the balancer then sees a wave leave that may be restarting.
func (w *Wave) runInstances(ctx, asked context.Context, httpAddr string) error {
	adv := w.opts.AdvertiseAddr
	if adv == "" {
		adv = httpAddr
	}
	member, _ := json.Marshal(map[string]string{
		"addr": adv, "version": buildinfo.String(), "started_at": time.Now().UTC().Format(time.RFC3339),
	})
	// Held past ctx: released once the instances have stopped (deferred first, run last).
	hold, release := context.WithCancel(context.WithoutCancel(ctx))
	defer release()
	if err := w.register(ctx, hold, member); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	w.log.Info("wave running", "http", httpAddr, "version", buildinfo.String())
	if err := cluster.ClearStop(ctx, w.opts.Coord, w.opts.Node); err != nil {
		// Harmless but for this: should this process die, the balancer would wait the
		// failover grace for it as for a wave restarting.
		w.log.Warn("could not clear the record of this wave's last clean stop", "err", err)
	}

	// The membership is watched from here on: a wave this one never saw alive is absent
	// since now (cluster.Members).
	w.members = cluster.NewMembers(time.Now())
	members, err := w.opts.Coord.WatchMembers(ctx, cluster.GroupWaves)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("wave: watch members: %w", err)
	}
	watched := make(chan struct{})
	go func() {
		// Of its own: the instance loop below can be busy stopping runners, and the
		// balancer must see every change as it comes.
		defer close(watched)
		for ms := range members {
			w.members.Apply(ms, time.Now())
		}
	}()
	close(w.registered)
	if w.opts.Ready != nil {
		w.opts.Ready(httpAddr)
	}

	tick := time.NewTicker(w.opts.PollInterval)
	defer tick.Stop()
	defer w.stopRunners()
	for {
		_, changed := w.members.Changes() // before reconciling: a change meanwhile wakes the next wait
		w.reconcile(ctx)
		select {
		case <-ctx.Done():
		case <-watched: // it ends with ctx too: either may come first
			if ctx.Err() == nil {
				return errors.New("wave: member watch ended (coordinator closed or session lost)")
			}
		case <-changed:
			continue
		case <-tick.C:
			continue
		}
		if asked.Err() != nil {
			w.recordStop()
		}
		return nil
	}
}

// recordStop says this wave was asked to stop, while it still holds its name.
func (w *Wave) recordStop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := cluster.RecordStop(ctx, w.opts.Coord, w.opts.Node, buildinfo.String()); err != nil {
		w.log.Warn("could not say this wave stopped cleanly: the balancer will place its instances elsewhere at once", "err", err)
	}
}

// registerWait bounds how long a wave waits for its node name to be free: a previous
// session's lasts at most the coordinator's session timeout (seconds); one still held
// after this is another wave's.
var registerWait = time.Minute

// register joins the waves group, as a member until hold ends, or until ctx ends before
// it could. A previous incarnation of this node (killed, session not yet expired) may
// still hold the name: retry until it is gone, meanwhile a member of
// cluster.GroupStarting, so that the balancer holds this wave's instances when that
// session ends.
func (w *Wave) register(ctx, hold context.Context, data []byte) error {
	deadline := time.Now().Add(registerWait)
	sctx, starting := context.WithCancel(ctx)
	defer starting() // registered, or given up: no longer starting
	said, marked := false, false
	for {
		err := w.opts.Coord.Register(hold, cluster.GroupWaves, coord.Member{ID: w.opts.Node, Data: data})
		if err == nil {
			return nil
		}
		if errors.Is(err, coord.ErrExists) && time.Now().After(deadline) {
			return fmt.Errorf("wave: node name %s is still registered after %s: another wave runs under this name (give this one a node of its own), or the coordinator keeps a dead session longer than that: %w",
				w.opts.Node, registerWait, err)
		}
		if !errors.Is(err, coord.ErrExists) {
			return fmt.Errorf("wave: register as %s: %w", w.opts.Node, err)
		}
		if !said {
			w.log.Warn("node name already registered: by a wave that ended within the coordinator's session timeout (its name is free when that session expires), or by another wave running under this name; waiting",
				"up_to", registerWait.String())
		}
		if !marked {
			// ErrExists: the previous process was starting too; its mark ends with its
			// session, and this one takes over at the next try.
			err := w.opts.Coord.Register(sctx, cluster.GroupStarting, coord.Member{ID: w.opts.Node})
			marked = err == nil
			if err != nil && !errors.Is(err, coord.ErrExists) && !said {
				w.log.Warn("could not say this wave is starting: the balancer may place its instances elsewhere when the previous session ends",
					"err", err)
			}
		}
		said = true
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Close stops Run and waits for it. It is idempotent and does not close the coordinator
// or publisher, which the caller owns.
func (w *Wave) Close() error {
	w.mu.Lock()
	w.closed = true
	stop, started := w.stop, w.started
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	if started {
		<-w.done
	}
	return nil
}
