package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
)

// proc writes one /proc/PID entry the way the kernel lays it out.
func proc(t *testing.T, root string, pid int, comm string, args []string, utime, stime, start uint64, rssKB uint64) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	stat := fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 1000 0 0 0 %d %d 0 0 20 0 12 0 %d 1234567 %d 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, comm, pid, pid, utime, stime, start, rssKB/4)
	status := fmt.Sprintf("Name:\t%s\nState:\tS (sleeping)\nVmPeak:\t  999999 kB\nVmHWM:\t%8d kB\nVmRSS:\t%8d kB\nThreads:\t12\n", comm, rssKB+100, rssKB)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644))
}

func newAt(t *testing.T, cfg Config) (*Collector, *time.Time) {
	c, err := New(cfg)
	require.NoError(t, err)
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	return c, &now
}

func TestProcessByCmdline(t *testing.T) {
	root := t.TempDir()
	proc(t, root, 100, "binlake", []string{"/usr/bin/binlake", "wave", "--config", "/etc/binlake/wave.yaml"}, 1000, 500, 4242, 81920)
	proc(t, root, 200, "binlake", []string{"/usr/bin/binlake", "agent"}, 10, 5, 4300, 20480)
	proc(t, root, 300, "mysqld", []string{"/usr/sbin/mysqld"}, 90000, 9000, 100, 1<<20)
	// Not a process directory: ignored.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "net"), 0o755))

	c, now := newAt(t, Config{Cmdline: `^\S*binlake wave( |$)`, Label: "wave", ProcRoot: root})
	first, err := c.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, []metric.Point{
		{Name: Count, Value: 1, Labels: map[string]string{"process": "wave"}},
		{Name: RSSBytes, Value: 81920 * 1024, Labels: map[string]string{"process": "wave"}},
	}, first, "no CPU rate on the first tick")

	// 10 s later the wave used 250 + 50 more ticks = 3 s of CPU: 30% of one core.
	proc(t, root, 100, "binlake", []string{"/usr/bin/binlake", "wave", "--config", "/etc/binlake/wave.yaml"}, 1250, 550, 4242, 90000)
	*now = now.Add(10 * time.Second)
	second, err := c.Collect(context.Background())
	require.NoError(t, err)
	require.Len(t, second, 3)
	require.Equal(t, 90000.0*1024, second[1].Value)
	require.Equal(t, CPUPct, second[2].Name)
	require.InDelta(t, 30.0, second[2].Value, 1e-9)
	for _, p := range second {
		require.Contains(t, Points, p.Name, "a name the collector sends is in Points (its factory's Emits)")
	}
}

func TestProcessByNameSumsAndRestarts(t *testing.T) {
	root := t.TempDir()
	proc(t, root, 10, "worker", []string{"worker"}, 100, 0, 50, 1000)
	proc(t, root, 11, "worker", []string{"/opt/bin/worker", "-x"}, 200, 0, 60, 3000)
	c, now := newAt(t, Config{Name: "worker", ProcRoot: root})
	pts, err := c.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2.0, pts[0].Value)
	require.Equal(t, 4000.0*1024, pts[1].Value)

	// pid 11 was replaced by another process with the same pid (new start time): its
	// CPU does not count as a rate; pid 10 used 1 s in 10 s.
	proc(t, root, 10, "worker", []string{"worker"}, 200, 0, 50, 1000)
	proc(t, root, 11, "worker", []string{"worker"}, 5, 0, 999, 3000)
	*now = now.Add(10 * time.Second)
	pts, err = c.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, CPUPct, pts[2].Name)
	require.InDelta(t, 10.0, pts[2].Value, 1e-9)
}

func TestProcessPIDFile(t *testing.T) {
	root := t.TempDir()
	proc(t, root, 77, "binlake", []string{"binlake", "wave"}, 1, 1, 1, 2048)
	pidFile := filepath.Join(t.TempDir(), "wave.pid")
	require.NoError(t, os.WriteFile(pidFile, []byte("77\n"), 0o644))
	c, _ := newAt(t, Config{PIDFile: pidFile, ProcRoot: root})
	pts, err := c.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, "wave", pts[0].Labels["process"])
	require.Equal(t, 1.0, pts[0].Value)

	// The process is gone: a measurement of zero, not a collector failure.
	require.NoError(t, os.WriteFile(pidFile, []byte("78\n"), 0o644))
	pts, err = c.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, []metric.Point{{Name: Count, Value: 0, Labels: map[string]string{"process": "wave"}}}, pts)

	require.NoError(t, os.WriteFile(pidFile, []byte("seventy\n"), 0o644))
	_, err = c.Collect(context.Background())
	require.ErrorContains(t, err, `"seventy" is not a process id`)

	require.NoError(t, os.Remove(pidFile))
	_, err = c.Collect(context.Background())
	require.ErrorContains(t, err, "wave.pid")
}

func TestReadSelf(t *testing.T) {
	st, err := Read("/proc", os.Getpid())
	require.NoError(t, err)
	require.Greater(t, st.RSSBytes, uint64(0))
	require.GreaterOrEqual(t, st.HWMBytes, st.RSSBytes)
	require.NotEmpty(t, st.Args)
}

func TestReadMalformed(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "5")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, body := range []string{"", "5 (x", "5 (x) S 1 2", "5 (a) b) S 1 1 1 0 -1 0 0 0 0 0 x y 0 0 20 0 1 0 z 0 0\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(body), 0o644))
		_, err := Read(root, 5)
		require.Error(t, err, "%q", body)
	}
}

func TestConfig(t *testing.T) {
	require.ErrorContains(t, (&Config{}).Validate(), "pid_file, name or cmdline")
	require.ErrorContains(t, (&Config{Cmdline: "("}).Validate(), "cmdline")
	require.NoError(t, (&Config{Name: "x"}).Validate())
}
