package wave

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// TestRetryBacksOff: a pipeline that fails at once on every term (here its source's
// password is missing; a source refusing the login is alike) is tried again after a pause
// that doubles up to reconnect_max_backoff, not every retry pause, and its retries do not
// each log that the wave leads the instance.
func TestRetryBacksOff(t *testing.T) {
	ctx := t.Context()
	inst := wavetest.ValidInstance()
	c := coordWith(t, inst)
	var mu sync.Mutex
	var attempts []time.Time
	var logs bytes.Buffer
	w, err := New(Options{Node: "me", Coord: c, Publisher: nopPublisher{},
		Logger:   slog.New(slog.NewTextHandler(&syncWriter{mu: &mu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Pipeline: PipelineOptions{RetryBackoff: 20 * time.Millisecond, ReconnectBackoffMax: 320 * time.Millisecond},
		Password: func(cluster.Source) (config.Secret, error) {
			mu.Lock()
			attempts = append(attempts, time.Now())
			mu.Unlock()
			return "", ErrSecretMissing
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.stopRunners()
	w.reconcile(ctx)
	time.Sleep(1500 * time.Millisecond)
	w.stopRunners()

	mu.Lock()
	defer mu.Unlock()
	// 20, 40, 80, 160, 320, 320, … ms (± 20 %): about 8 attempts in 1.5 s, where a fixed
	// 20 ms pause makes about 70.
	if n := len(attempts); n < 4 || n > 12 {
		t.Fatalf("%d attempts in 1.5 s, want about 8", n)
	}
	if gap := attempts[len(attempts)-1].Sub(attempts[len(attempts)-2]); gap < 250*time.Millisecond {
		t.Errorf("the last pause was %v, want about reconnect_max_backoff (320 ms)", gap)
	}
	if n := strings.Count(logs.String(), `msg="leading instance"`); n != 1 {
		t.Errorf("%q logged %d times at INFO over %d attempts, want once:\n%s", "leading instance", n, len(attempts), logs.String())
	}
}

// syncWriter serialises the log's writes with the test's reads.
type syncWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
