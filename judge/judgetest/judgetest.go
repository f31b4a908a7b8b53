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

func newJudge(t testing.TB, token string) *judge.Judge {
	t.Helper()
	st, err := sqlite.Open(sqlite.Options{Path: filepath.Join(t.TempDir(), "judge.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j, err := judge.New(judge.Options{Store: st, Algorithm: "leastload", Token: config.Secret(token),
		Plugins: map[string]lbplugins.Settings{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	for node, load := range map[string]float64{"wave-busy": 95, "wave-idle": 5} {
		b := metric.Batch{Node: node, TS: time.Now(), IntervalS: 10, Points: []metric.Point{
			{Name: "cpu.util", Value: load}, {Name: "mem.used_pct", Value: load}}}
		if err := j.Ingest(b, "judgetest"); err != nil {
			t.Fatal(err)
		}
	}
	return j
}
