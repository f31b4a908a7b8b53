package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/agent/collector/host"
	"github.com/binlake/binlake/agent/collector/process"
	"github.com/binlake/binlake/agent/collector/wave"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/metric/waveprom"
	"github.com/binlake/binlake/internal/testenv"
)

// TestAgentKafkaIntegration runs the agent with all three collectors against the real
// Kafka and reads the topic back with a consumer group, decoding with internal/metric.
func TestAgentKafkaIntegration(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)

	// A wave stand-in: the wave's series (internal/metric/waveprom) on a client_golang
	// registry with the Go collector, as the wave registers them.
	reg := prometheus.NewRegistry()
	rows := prometheus.NewCounterVec(prometheus.CounterOpts{Name: waveprom.RowsPublished, Help: "h"}, []string{waveprom.LabelInstance})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: waveprom.PublishErrors, Help: "h"}, []string{waveprom.LabelInstance})
	lag := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: waveprom.LagSeconds, Help: "h"}, []string{waveprom.LabelInstance})
	led := prometheus.NewGauge(prometheus.GaugeOpts{Name: waveprom.InstancesLed, Help: "h"})
	reg.MustRegister(rows, errs, lag, led, collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/pauses/total/gc:seconds$`)})))
	rows.WithLabelValues("orders").Add(10)
	errs.WithLabelValues("orders")
	lag.WithLabelValues("orders").Set(0.5)
	led.Set(1)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	waveSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rows.WithLabelValues("orders").Add(100) // the wave keeps publishing
		h.ServeHTTP(w, r)
	}))
	defer waveSrv.Close()

	// A process to watch, found by its pid file.
	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pidFile := filepath.Join(t.TempDir(), "wave.pid")
	require.NoError(t, os.WriteFile(pidFile, []byte(fmt.Sprint(sleeper.Process.Pid)), 0o644))

	node := fmt.Sprintf("agent-it-%d", time.Now().UnixNano())
	topic := "binlake.metrics.it." + node[len("agent-it-"):]
	cfg := DefaultConfig()
	cfg.Node = node
	cfg.Interval = config.Duration(200 * time.Millisecond)
	cfg.HTTP.Listen = MetricsListenOff
	cfg.Sink.Kafka.Brokers = testenv.HostPorts(brokers)
	cfg.Sink.Kafka.Topic = topic
	hc := host.DefaultConfig()
	hc.PerCPU = true
	wc := wave.DefaultConfig()
	wc.URL = waveSrv.URL + "/metrics"
	cfg.Collectors = Collectors{}
	cfg.Collectors.Set("host", hc)
	cfg.Collectors.Set("wave", wc)
	cfg.Collectors.Set("process", &process.Config{PIDFile: pidFile})

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := kafka.New(kafka.Options{Brokers: cfg.Sink.Kafka.Brokers, Logger: log})
	require.NoError(t, err)
	defer b.Close()
	a, err := New(Options{Config: cfg, Sink: NewBusSink(b, BusSinkOptions{Topic: topic, Partitions: 1, Replication: 1}), Logger: log})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-errc)
		require.NoError(t, a.Close())
	}()

	// The agent creates the topic with its first batch.
	deadline := time.Now().Add(60 * time.Second)
	for a.Stats().Delivered == 0 {
		require.True(t, time.Now().Before(deadline), "no batch delivered: %+v", a.Stats())
		time.Sleep(50 * time.Millisecond)
	}

	sub, err := b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: node, StartAt: bus.StartFirst})
	require.NoError(t, err)
	defer sub.Close()
	want := []string{
		metric.CPUUtil, metric.Load1, metric.Load5, metric.Load15, metric.MemUsedPct,
		host.SwapUsedPct, metric.NetRxBps, metric.NetTxBps, metric.DiskUsedPct,
		metric.GoHeapBytes, metric.GoGCPauseP99, metric.GoGoroutines,
		metric.WaveTPS, metric.WaveInstances, metric.WaveLagSeconds, metric.WavePublishErrs,
		process.Count, process.RSSBytes, process.CPUPct,
		BufferLen, DroppedBatches, CollectorErrors, CollectorUp, CollectSeconds, RSSBytes,
	}
	sctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	var missing []string
	batches := 0
	found := false
	err = sub.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
		batch, err := metric.Decode(m.Value)
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if string(m.Key) != node || batch.Node != node {
			return fmt.Errorf("key %q node %q, want %q", m.Key, batch.Node, node)
		}
		batches++
		names := map[string]bool{}
		for _, p := range batch.Points {
			names[p.Name] = true
		}
		missing = missing[:0]
		for _, n := range want {
			if !names[n] {
				missing = append(missing, n)
			}
		}
		// Rates need two ticks at least a jiffy apart: one batch must have them all.
		if len(missing) == 0 {
			found = true
			stop()
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, found, "after %d batches, the last still lacked %s", batches, strings.Join(missing, ", "))
	require.Zero(t, a.Stats().Dropped)
}
