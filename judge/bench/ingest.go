package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/binlake/binlake/internal/benchkit"
)

// IngestResult holds the figures of an ingest run.
type IngestResult struct {
	// Store names where the points went, Via how they got to the judge.
	Store, Via            string
	Nodes, Senders, Batch int
	// Points and Batches the judge accepted (all that were sent: a refused batch ends
	// the run).
	Points, Batches int64
	// Elapsed runs from the first send to the judge reporting every point written;
	// Sending to the last batch accepted. Prefilled (through Kafka): the points were
	// produced before the judge started, in Sending, and Elapsed runs from the judge
	// serving.
	Elapsed, Sending time.Duration
	Prefilled        bool
	// Written, Dropped and WriteErrors are the judge's store buffer counters over the run.
	Written, Dropped, WriteErrors int64
	// Stored is the count of points in the engine itself, after the run.
	Stored int64
}

// PointsPerS is the rate from the first send to every point written.
func (r *IngestResult) PointsPerS() float64 { return float64(r.Points) / r.Elapsed.Seconds() }

// pollEvery is how often the judge's counters are read while ingesting: it bounds how
// late the end of the run is seen, and how stale the window below is.
const pollEvery = 10 * time.Millisecond

// stallAfter ends a run whose store writes nothing for this long.
const stallAfter = time.Minute

// prefill produces every batch of a -bus kafka run into its topic before the judge
// starts. The judge's figure is then its own, from Kafka to stored: it drains a topic
// that holds the whole run, as after an outage, with no producer and broker intake
// competing for the machine's two cores (a 1M points/s producer beside it took most of
// the first seconds' CPU).
func prefill(ctx context.Context, o Options, e *env) (time.Duration, error) {
	prod := benchkit.NewProducer(o.Brokers, e.topic, "binlake-bench-judge")
	defer prod.Close()
	in := &ingester{o: o, f: benchkit.NewFleet(o.Nodes, o.Batch), w: newWindow(math.MaxInt64 / 2),
		dial: func() (batchSender, error) { return topicSender{prod}, nil },
		flush: func() error {
			prod.Close()
			if prod.Failed() > 0 {
				return fmt.Errorf("bench judge: the broker refused %d points: %w", prod.Failed(), prod.Err())
			}
			return nil
		}}
	fmt.Fprintf(o.Out, "producing %d points from %d nodes in batches of %d into topic %s before the judge starts\n",
		o.Points, o.Nodes, o.Batch, e.topic)
	start := time.Now()
	if err := in.send(ctx); err != nil {
		return 0, err
	}
	took := time.Since(start)
	fmt.Fprintf(o.Out, "produced in %s (%.0f points/s)\n", took.Round(time.Millisecond), float64(o.Points)/took.Seconds())
	return took, nil
}

// runIngest measures the judge's ingest. Over HTTP the senders post while the judge
// writes; through Kafka (produced, when not zero, is how long prefill took) the points
// are in the topic already and the clock starts with the judge serving.
func runIngest(ctx context.Context, o Options, e *env, j *judgeProc, produced time.Duration) (*Result, error) {
	out := o.Out
	h0, err := j.health(ctx)
	if err != nil {
		return nil, err
	}
	base := h0.Store.Written + h0.Store.Dropped
	res := &IngestResult{Store: e.store, Via: e.via, Nodes: o.Nodes, Senders: o.Concurrency, Batch: o.Batch,
		Prefilled: o.Bus == BusKafka}
	in := &ingester{o: o, f: benchkit.NewFleet(o.Nodes, o.Batch), j: j}
	if res.Prefilled {
		fmt.Fprintf(out, "the judge drains the topic's %d points\n", o.Points)
		in.accepted.Store(int64(o.Points))
		in.w = newWindow(math.MaxInt64 / 2)
	} else {
		fmt.Fprintf(out, "sending %d points from %d nodes in batches of %d with %d senders\n", o.Points, o.Nodes, o.Batch, o.Concurrency)
		in.dial = func() (batchSender, error) { return dialJudge(j.base) }
		if o.Bus == BusRemoteWrite {
			in.dial = func() (batchSender, error) {
				c, err := dialJudge(j.base)
				return rwConn{c}, err
			}
			in.encode = func(dst []byte, node, tick, size int, ts time.Time) []byte {
				return append(dst, encodeRemoteWrite(in.f.Batch(node, tick, size, ts, liveInterval))...)
			}
		}
		in.w = newWindow(int64(o.Buffer))
	}
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer in.w.close() // releases senders waiting for room when the run ends early
	cpu0, cerr0 := j.CPU()
	bcpu0 := benchkit.SelfCPU()
	start := time.Now()
	sent := make(chan error, 1)
	go func() {
		if res.Prefilled {
			res.Sending = produced
			sent <- nil
			return
		}
		err := in.send(sendCtx)
		res.Sending = time.Since(start)
		sent <- err
	}()

	// Poll the judge's counters: they open the window, show progress and end the run.
	var (
		h                  health
		sending            = true
		tick               = time.NewTicker(pollEvery)
		lastLine, lastMove = start, start
		lastW, lastS       int64
		settled            int64
	)
	defer tick.Stop()
	for {
		select {
		case err := <-sent:
			if err != nil {
				return nil, err
			}
			sending = false
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if h, err = j.health(ctx); err != nil {
			return nil, err
		}
		now := time.Now()
		if s := h.Store.Written + h.Store.Dropped - base; s != settled {
			settled, lastMove = s, now
			in.w.settle(s)
		}
		if !sending && settled >= in.accepted.Load() {
			res.Elapsed = now.Sub(start)
			break
		}
		if settled < in.accepted.Load() && now.Sub(lastMove) > stallAfter {
			return nil, fmt.Errorf("bench judge: the store wrote nothing for %s: %d of %d points written, %d write errors (see %s)",
				stallAfter, settled, in.accepted.Load(), h.Store.WriteErrors, j.Log)
		}
		if since := now.Sub(lastLine); since >= o.Progress {
			wr, sn := h.Store.Written-h0.Store.Written, in.accepted.Load()
			fmt.Fprintf(out, "  %5.1f s  sent %d/%d points (%.0f/s)  written %d (%.0f/s)  buffered %d\n", now.Sub(start).Seconds(),
				sn, o.Points, float64(sn-lastS)/since.Seconds(), wr, float64(wr-lastW)/since.Seconds(), h.Store.Buffered)
			lastLine, lastW, lastS = now, wr, sn
		}
	}
	cpu1, cerr1 := j.CPU()
	bcpu1 := benchkit.SelfCPU()
	res.Points, res.Batches = in.accepted.Load(), in.batches.Load()
	res.Written = h.Store.Written - h0.Store.Written
	res.Dropped = h.Store.Dropped - h0.Store.Dropped
	res.WriteErrors = h.Store.WriteErrors - h0.Store.WriteErrors
	// The store is counted once the judge is gone, with the store's own reader: SQLite
	// is one process's file, and nothing may still be on its way.
	if err := j.Stop(); err != nil {
		return nil, err
	}
	stored, err := e.stored(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench judge: %w", err)
	}
	res.Stored = stored
	r := &Result{Ingest: res, Window: res.Elapsed, BenchCPU: bcpu1 - bcpu0}
	r.JudgeCPU = cpu1 - cpu0
	if cerr0 != nil || cerr1 != nil {
		r.JudgeCPU = -1
	}
	reportIngest(out, r)
	switch {
	case res.Dropped > 0:
		return r, fmt.Errorf("bench judge: the judge dropped %d points on the way to the store (see %s)", res.Dropped, j.Log)
	case res.Stored != res.Points:
		return r, fmt.Errorf("bench judge: the store holds %d points, %d were sent", res.Stored, res.Points)
	}
	return r, nil
}

// ingester sends the run's batches from o.Concurrency senders, within the window.
type ingester struct {
	o Options
	f *benchkit.Fleet
	w *window
	j *judgeProc
	// dial gives each sender its way to the judge: a connection for POST /v1/metrics,
	// or the producer of the topic; flush, when set, waits for what the senders left
	// on their way.
	dial  func() (batchSender, error)
	flush func() error
	// encode appends a node's batch of size points at tick and ts as the senders post
	// it: the agent's JSON when nil.
	encode func(dst []byte, node, tick, size int, ts time.Time) []byte

	accepted, batches atomic.Int64
}

// exitNote is the judge's exit, when it has one to tell (none while prefilling).
func (in *ingester) exitNote() string {
	if in.j == nil {
		return ""
	}
	return in.j.ExitNote()
}

// send returns once every batch was accepted, or with the first refusal.
func (in *ingester) send(ctx context.Context) error {
	o := in.o
	nBatches := (o.Points + o.Batch - 1) / o.Batch
	tsBase := time.Now().Truncate(time.Millisecond)
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range o.Concurrency {
		g.Go(func() error {
			bs, err := in.dial()
			if err != nil {
				in.w.close()
				return fmt.Errorf("bench judge: %w", err)
			}
			defer bs.close()
			var body []byte
			for i := int(next.Add(1) - 1); i < nBatches; i = int(next.Add(1) - 1) {
				size := min(o.Batch, o.Points-i*o.Batch)
				if !in.w.acquire(int64(size)) {
					return nil // the run ended early
				}
				// Batch i is node i mod N's tick i/N, stamped tick milliseconds after the
				// base, so that no two points share an identity in the store.
				node, tick := i%o.Nodes, i/o.Nodes
				ts := tsBase.Add(time.Duration(tick) * time.Millisecond)
				if in.encode != nil {
					body = in.encode(body[:0], node, tick, size, ts)
				} else {
					body = in.f.AppendJSON(body[:0], node, tick, size, ts, liveInterval)
				}
				if err := bs.send(gctx, in.f.Node(node), body, size); err != nil {
					in.w.close()
					return fmt.Errorf("bench judge: batch %d of %d points: %w%s", i, size, err, in.exitNote())
				}
				in.accepted.Add(int64(size))
				in.batches.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil || in.flush == nil {
		return err
	}
	return in.flush()
}

// batchSender is one sender's way of delivering batches: a node's batch of points,
// encoded (body is the caller's to reuse once send returns).
type batchSender interface {
	send(ctx context.Context, node string, body []byte, points int) error
	close()
}

// topicSender publishes batches to the run's topic through the shared producer.
type topicSender struct{ prod *benchkit.Producer }

func (t topicSender) send(ctx context.Context, node string, body []byte, points int) error {
	return t.prod.Write(ctx, kafkago.Message{Key: []byte(node), Value: bytes.Clone(body), WriterData: points})
}

func (topicSender) close() {}

// window keeps the points sent and not yet settled (written or dropped, by the judge's
// counters) within the judge's store buffer: a judge before 2026-12-05 (-judge-binary)
// answered a batch once buffered and dropped the oldest points past its buffer, so
// without this the senders would outrun a slower store and measure drops. A judge that
// answers once stored keeps them within it by itself. The settled count is read, so it is never
// ahead of the judge's, and what is sent past it is at most the buffer.
type window struct {
	mu              sync.Mutex
	cond            *sync.Cond
	size            int64
	issued, settled int64
	closed          bool
}

func newWindow(size int64) *window {
	w := &window{size: size}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// acquire waits until n more points fit and counts them issued; false once closed.
func (w *window) acquire(n int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.closed && w.issued+n-w.settled > w.size {
		w.cond.Wait()
	}
	if w.closed {
		return false
	}
	w.issued += n
	return true
}

// settle records the points settled so far.
func (w *window) settle(n int64) {
	w.mu.Lock()
	w.settled = n
	w.mu.Unlock()
	w.cond.Broadcast()
}

// close releases every waiter for good.
func (w *window) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cond.Broadcast()
}
