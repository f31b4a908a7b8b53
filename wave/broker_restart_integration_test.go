package wave_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestWaveKafkaRestartIntegration is the wave's side of a real Kafka broker restart, which
// TestWaveKafkaOutageIntegration's proxy does not exercise (the broker's own shutdown, log
// recovery and leader election). A real wave process publishes to a broker of its own
// (testenv.StartKafkaBroker; the shared test broker serves other tests meanwhile) while
// rows are written to MariaDB. The broker is stopped twice while the stream flows, first
// with SIGTERM (a controlled shutdown), then with SIGKILL (a crash); each time more rows
// are written while it is down, and after 10 s it is started again on the same data
// folder and port. Publishing must resume by itself each time, and every row must reach
// Kafka: nothing lost, per-key order kept; duplicates (produce requests the broker took
// whose acknowledgement the wave never saw) at most the messages of the attempts it retried.
func TestWaveKafkaRestartIntegration(t *testing.T) {
	t.Parallel() // its own database, topics and ZooKeeper root: beside the other long process tests
	broker := testenv.StartKafkaBroker(t)
	ctx := testenv.Context(t) // no fixed budget: the workload slows down with the machine
	f := newFaultEnvOn(t, ctx, 24, "brk", broker.Addr())
	// A fifth of the other fault tests' stream: the two restarts, not the volume, are the
	// point, and each keeps the broker down for half a minute on a loaded machine.
	f.n = max(faultRows(t)/5, 900)
	if _, err := cluster.AddInstance(ctx, f.c, f.inst, "wave-r", nil); err != nil {
		t.Fatal(err)
	}
	p := wavetest.StartWave(t, "wave-r", f.config("wave-r", broker.Addr()), f.env)

	// The stream in four parts, two per stop: one flowing when the broker stops, one
	// written while it is down.
	const parts = 4
	var part <-chan *cluster.Position
	writePart := func(k int) {
		if part != nil {
			select {
			case <-part:
			case <-ctx.Done():
				t.Fatal("the workload did not finish its part")
			}
		}
		part = f.writeUpTo(f.n * k / parts)
	}
	const outage = 10 * time.Second
	// resumeLimit bounds how long after the broker serves again the wave commits: its
	// publisher's backoff and a metadata refresh, on a loaded machine (the judge's restart
	// test allows the same).
	const resumeLimit = 90 * time.Second
	series := `binlake_wave_publish_errors_total{instance="brk"}`
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		earlier := int64(f.expectedMessages())
		writePart(2*i + 1)
		f.waitFor(fmt.Sprintf("the stream flowing past %d messages", earlier), func() bool { return f.offset().Rows > earlier }, p)
		errsBefore := max(metricValue(f.scrape("wave-r"), series), 0)
		atStop := f.offset()
		stopped := broker.Stop(t, sig)
		writePart(2*i + 2)
		time.Sleep(outage) // the outage's length is the point of the test, not a wait for a condition
		errsDuring := metricValue(f.scrape("wave-r"), series)
		stalled := f.offset()
		started := broker.Start(t)
		upAt := time.Now()
		if errsDuring <= errsBefore {
			t.Errorf("%v: publish errors %v before the stop and %v at the end of the outage: the outage did not reach the wave", sig, errsBefore, errsDuring)
		}
		f.waitFor(fmt.Sprintf("the offset to move after the broker's restart (%v)", sig), func() bool { return f.offset().Rows > stalled.Rows }, p)
		resumed := time.Since(upAt)
		if resumed > resumeLimit {
			t.Errorf("%v: the wave committed again %s after the broker served, over %s", sig, resumed.Round(10*time.Millisecond), resumeLimit)
		}
		t.Logf("%v at %d messages committed: the broker was gone %s after the signal and down %s in all; the offset stood at %d; "+
			"the wave committed again %s after the broker served again (%.0f publish errors meanwhile)",
			sig, atStop.Rows, stopped.Round(10*time.Millisecond), (stopped + outage + started).Round(100*time.Millisecond), stalled.Rows,
			resumed.Round(10*time.Millisecond), errsDuring-errsBefore)
	}

	// The readers start now, from the topics' first offsets: one running during a stop
	// would end at its first error.
	f.startReaders()
	dups := f.finish(part, p)
	t.Logf("after two broker restarts: every row on Kafka, %d duplicates", dups)
	// The wave ran throughout: no uncommitted tail is replayed, so every duplicate is a
	// message of a publish attempt it retried.
	checkDuplicates(t, dups, 0, p)
}
