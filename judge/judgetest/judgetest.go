// Package judgetest serves a real judge for the tests of its clients: an in-process
// judge on a SQLite store in the test's temporary folder, behind an httptest server.
package judgetest

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/judgetest/wavefleet"
	"github.com/binlake/binlake/judge/store/sqlite"
	"github.com/binlake/binlake/lbplugins"
	_ "github.com/binlake/binlake/lbplugins/all" // the judge's algorithms
)

// Start serves a judge that places by leastload, requires token on its POST endpoints
// (none when empty), and has heard from two waves: wave-busy at 95 % CPU and memory,
// wave-idle at 5 %. The judge and the server stop with the test.
func Start(t testing.TB, token string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newJudge(t, token).Handler())
	t.Cleanup(srv.Close)
	return srv
}

// StartTLS is Start over HTTPS, with httptest's own certificate (srv.Certificate()).
func StartTLS(t testing.TB, token string) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(newJudge(t, token).Handler())
	t.Cleanup(srv.Close)
	return srv
}

// StartFleet serves a judge whose default algorithm is algorithm and whose agents have
// reported the waves for the last 400 s (wavefleet.Batches): enough for its load model
// to price their work. No token.
func StartFleet(t testing.TB, algorithm string, waves []wavefleet.Wave) *httptest.Server {
	t.Helper()
	j := open(t, "", algorithm)
	for _, b := range wavefleet.Batches(waves, 40, time.Now()) {
		if err := j.Ingest(b, "judgetest"); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(j.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// open builds a judge on a SQLite store in the test's folder, closed with the test.
func open(t testing.TB, token, algorithm string) *judge.Judge {
	t.Helper()
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j, err := judge.New(judge.Options{Store: st, Algorithm: algorithm, Token: config.Secret(token),
		Plugins: map[string]lbplugins.Settings{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func newJudge(t testing.TB, token string) *judge.Judge {
	t.Helper()
	j := open(t, token, "leastload")
	for node, load := range map[string]float64{"wave-busy": 95, "wave-idle": 5} {
		b := metric.Batch{Node: node, TS: time.Now(), IntervalS: 10, Points: []metric.Point{
			{Name: "cpu.util", Value: load}, {Name: "mem.used_pct", Value: load}}}
		if err := j.Ingest(b, "judgetest"); err != nil {
			t.Fatal(err)
		}
	}
	return j
}
