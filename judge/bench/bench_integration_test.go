package bench

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/testenv"
)

// These tests run the real command's work against a real judge process built from the
// tree. Placement and SQLite ingest need no service, so they run in every `go test`
// (-short skips them outside CI: the build takes a while); Elasticsearch ingest needs
// $BINLAKE_TEST_ES and is skipped without it unless CI=true.

// runBench runs a small bench and returns its printed report.
func runBench(t *testing.T, edit func(*Options)) (*Result, string) {
	t.Helper()
	if testing.Short() && !testenv.InCI() {
		t.Skip("-short: builds and runs the binlake binary")
	}
	o := DefaultOptions()
	o.Binary = testenv.BinlakeBinary(t)
	o.Progress = 500 * time.Millisecond
	var out bytes.Buffer
	o.Out = &out
	edit(&o)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	checkCleanedUp(t, out.String())
	return res, out.String()
}

// figure extracts the number captured by re from the report, failing when absent.
func figure(t *testing.T, report, re string) float64 {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("report lacks %s:\n%s", re, report)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", re, err)
	}
	return v
}

// checkCleanedUp: the judge process has exited and its folder is gone.
func checkCleanedUp(t *testing.T, report string) {
	t.Helper()
	pid := int(figure(t, report, `\(pid (\d+)\)`))
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the judge (pid %d) still runs after the bench", pid)
	}
	dir := regexp.MustCompile(`judge config (\S+)/judge\.yaml`).FindStringSubmatch(report)
	if dir == nil {
		t.Fatalf("report does not name the config:\n%s", report)
	}
	if _, err := os.Stat(dir[1]); !os.IsNotExist(err) {
		t.Errorf("%s still there after the bench: %v", dir[1], err)
	}
}

func TestPlacementIntegration(t *testing.T) {
	res, report := runBench(t, func(o *Options) {
		o.Nodes, o.Duration, o.Concurrency, o.IngestRate = 50, 2*time.Second, 4, 400
	})
	reqs := figure(t, report, `answers in \S+: (\d+) req/s`)
	p50 := figure(t, report, `p50 ([\d.]+) ms`)
	p99 := figure(t, report, `p99 ([\d.]+) ms`)
	maxMs := figure(t, report, `max ([\d.]+) ms`)
	bytesPer := figure(t, report, `answer: (\d+) bytes mean`)
	ingest := figure(t, report, `ingest meanwhile: (\d+) points/s`)
	if reqs <= 0 || p50 <= 0 || p50 > p99 || p99 > maxMs || bytesPer < float64(len(`{"node":""}`)) || ingest <= 0 {
		t.Errorf("figures not sane: %v req/s, p50 %v, p99 %v, max %v ms, %v bytes per answer, ingest %v points/s",
			reqs, p50, p99, maxMs, bytesPer, ingest)
	}
	if !strings.Contains(report, "errors: none") {
		t.Errorf("placement errors:\n%s", report)
	}
	p := res.Placement
	if p.Answers != int64(p.Latency.N) || p.Answers == 0 || p.Nodes != 50 || p.Ingest.Errors != 0 {
		t.Errorf("result %+v", p)
	}
	// 400 points/s for 2 s of 8-point batches; the achieved rate is within reach of it.
	if r := p.Ingest.PointsPerS(); r < 100 || r > 600 {
		t.Errorf("ingest achieved %.0f points/s, target 400", r)
	}
}

func TestIngestSQLiteIntegration(t *testing.T) {
	const points = 30_001 // not a multiple of the batch: the last batch is partial
	res, report := runBench(t, func(o *Options) {
		o.Mode, o.Nodes, o.Points, o.Batch, o.Concurrency = ModeIngest, 20, points, 100, 4
		o.Buffer = 5_000 // below the points sent: the senders must wait for the store
		o.StoreBatch = 1_000
	})
	checkIngest(t, res, report, points)
}

// TestIngestRemoteWriteIntegration: the same through POST /api/v1/write, each point a
// series of a WriteRequest; every sample is stored (counted in the engine).
func TestIngestRemoteWriteIntegration(t *testing.T) {
	const points = 10_001
	res, report := runBench(t, func(o *Options) {
		o.Mode, o.Bus, o.Nodes, o.Points, o.Batch, o.Concurrency = ModeIngest, BusRemoteWrite, 20, points, 100, 4
		o.Buffer = 5_000
		o.StoreBatch = 1_000
	})
	checkIngest(t, res, report, points)
	if !strings.Contains(report, "through POST /api/v1/write") {
		t.Errorf("report does not say the points went through remote write:\n%s", report)
	}
}

func TestIngestElasticIntegration(t *testing.T) {
	es := testenv.Require(t, testenv.Elasticsearch)
	const points = 5_000
	res, report := runBench(t, func(o *Options) {
		o.Mode, o.Store, o.ES, o.Nodes, o.Points, o.Batch, o.Concurrency = ModeIngest, StoreElastic, es, 10, points, 50, 2
	})
	checkIngest(t, res, report, points)
	m := regexp.MustCompile(`indices (binlake-bench-[0-9-]+)\*`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("report does not name the indices:\n%s", report)
	}
	resp, err := http.Get(strings.TrimRight(es, "/") + "/_cat/indices/" + m[1] + "*?h=index")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if strings.TrimSpace(body.String()) != "" {
		t.Errorf("indices of the run left behind: %s", body.String())
	}
}

// TestIngestKafkaIntegration: through a topic of the run's own, which the judge consumes
// as its bus; every point is stored once, and the topic is deleted at the end.
func TestIngestKafkaIntegration(t *testing.T) {
	brokers := testenv.HostPorts(testenv.Require(t, testenv.Kafka))
	const points = 20_001
	res, report := runBench(t, func(o *Options) {
		o.Mode, o.Bus, o.Brokers, o.Nodes, o.Points, o.Batch, o.Concurrency = ModeIngest, BusKafka, brokers, 20, points, 100, 4
		o.Buffer, o.StoreBatch = 5_000, 1_000 // below the points sent: the bus must wait for the store
	})
	checkIngest(t, res, report, points)
	if !res.Ingest.Prefilled || !strings.Contains(report, "after the judge started serving") || res.Ingest.Sending <= 0 {
		t.Errorf("want the topic filled before the judge started and the clock from its start:\n%s", report)
	}
	m := regexp.MustCompile(`through Kafka topic (\S+) `).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("report does not name the topic:\n%s", report)
	}
	k := benchkit.NewKafka(brokers)
	defer k.Close()
	if ok, err := k.TopicExists(context.Background(), m[1]); err != nil || ok {
		t.Errorf("topic %s still exists after the bench (%v)", m[1], err)
	}
}

func checkIngest(t *testing.T, res *Result, report string, points int) {
	t.Helper()
	rate := figure(t, report, `after (?:the first send|the judge started serving): (\d+) points/s`)
	stored := figure(t, report, `the store holds (\d+) points`)
	if rate <= 0 || int(stored) != points {
		t.Errorf("figures not sane: %v points/s, %v stored of %d", rate, stored, points)
	}
	i := res.Ingest
	if i.Points != int64(points) || i.Written != int64(points) || i.Dropped != 0 || i.Stored != int64(points) {
		t.Errorf("result %+v: want %d points sent, written and stored, none dropped", i, points)
	}
	if res.JudgeCPU <= 0 {
		t.Errorf("judge CPU %s: want the judge's CPU time from /proc", res.JudgeCPU)
	}
}
