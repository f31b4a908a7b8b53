package wave

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	wm "github.com/binlake/binlake/agent/collector/wave"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("read the source's current position: %w", capture.ErrBinlogOff), ReasonBinlogOff},
		{fmt.Errorf("SHOW MASTER STATUS: %w", mysql.NewError(mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, "need BINLOG MONITOR")), ReasonAccessDenied},
		{fmt.Errorf("connect: %w", mysql.NewError(mysql.ER_ACCESS_DENIED_ERROR, "Access denied for user")), ReasonAccessDenied},
		{fmt.Errorf("connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), ReasonUnreachable},
		{capture.Fatal(fmt.Errorf("%w: x", capture.ErrBinlogPurged)), ReasonBinlogPurged},
		{capture.Fatal(fmt.Errorf("%w: x", capture.ErrPositionUnserved)), ReasonPositionUnserved},
		{capture.Fatal(fmt.Errorf("%w: x", capture.ErrStatementDML)), ReasonStatementDML},
		{capture.Fatal(fmt.Errorf("%w: x", capture.ErrXAUnreadable)), ReasonXAUnreadable},
		{capture.Fatal(fmt.Errorf("%w: x", capture.ErrRowImagePartial)), ReasonRowImagePartial},
		{capture.Fatal(fmt.Errorf("%w: x", capture.ErrRollbackLogged)), ReasonRollbackLogged},
		{fmt.Errorf("commit: %w", ErrFenced), ReasonFenced},
		{fmt.Errorf("%w: source.password_env names X, which is not set", ErrSecretMissing), ReasonSecretMissing},
		// As the source ends the binlog connection of a replica whose server_id another
		// took: MariaDB with its own code, MySQL with a purged binlog's.
		{mysql.NewError(4052, "A slave with the same server_uuid/server_id is already connected; the first event '.' at 4, the last event read from 'binlog.000051' at 19328144"), ReasonServerIDClash},
		{mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, "A slave with the same server_uuid/server_id as this slave has connected to the master; the first event 'binlog.000001' at 4"), ReasonServerIDClash},
		{fmt.Errorf("%w: x", capture.ErrServerIDClash), ReasonServerIDClash},
		{mysql.NewError(mysql.ER_NO_SUCH_TABLE, "no table"), ReasonOther},
		{errors.New("capture ended"), ReasonOther},
	} {
		if got := Reason(tc.err); got != tc.want {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestStateMetricReachesTheAgent: the wave's state series, scraped by the agent's wave
// collector, becomes wave.instance_running: 1 while running, 0 with the state and reason
// while not, nothing on standby.
func TestStateMetricReachesTheAgent(t *testing.T) {
	m := newMetrics()
	srv := httptest.NewServer(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	cfg := wm.DefaultConfig()
	cfg.URL = srv.URL
	col, err := wm.New(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	points := func() []string {
		t.Helper()
		pts, err := col.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pts {
			if p.Name == metric.WaveInstanceRunning {
				out = append(out, fmt.Sprintf("%s %s %s %g", p.Labels["instance"], p.Labels["state"], p.Labels["reason"], p.Value))
			}
		}
		slices.Sort(out)
		return out
	}
	var st InstanceStatus
	st.fail(cluster.StateRetrying, fmt.Errorf("read the source's current position: %w", capture.ErrBinlogOff))
	st.ID = "a"
	m.setState(st)
	m.setState(InstanceStatus{ID: "b", State: cluster.StateRunning})
	m.setState(InstanceStatus{ID: "c", State: cluster.StateStandby})
	if got, want := points(), []string{"a retrying binlog_off 0", "b running  1"}; !slices.Equal(got, want) {
		t.Fatalf("points %q, want %q", got, want)
	}
	// A state replaces the previous one; a standby or forgotten instance has no series.
	m.setState(InstanceStatus{ID: "a", State: cluster.StateRunning})
	m.setState(InstanceStatus{ID: "b", State: cluster.StateStandby})
	m.dropState("c")
	if got, want := points(), []string{"a running  1"}; !slices.Equal(got, want) {
		t.Fatalf("points %q, want %q", got, want)
	}
}
