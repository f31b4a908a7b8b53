package bench

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/binlake/binlake/internal/benchkit"
)

// CaptureCPU is the CPU each process spent during a capture; -1 when unknown (a
// process on another machine, or /proc not readable).
type CaptureCPU struct {
	Wave, Broker, Source time.Duration
}

// cpuWatch reads the processes' CPU at the start and the end of the capture.
type cpuWatch struct {
	brokerPid, sourcePid int
	wave, broker, source time.Duration
}

// newCPUWatch finds the broker and the source server by their listening ports on this
// machine (a scan of /proc that takes tens of milliseconds: done before the clock runs).
func newCPUWatch(opts Options) *cpuWatch {
	return &cpuWatch{brokerPid: localPid(opts.Brokers[0]), sourcePid: localPid(opts.Addr)}
}

// start reads every process's CPU: the start of the window stop measures.
func (w *cpuWatch) start() {
	w.wave, w.broker, w.source = benchkit.SelfCPU(), pidCPU(w.brokerPid), pidCPU(w.sourcePid)
}

func (w *cpuWatch) stop() CaptureCPU {
	since := func(pid int, before time.Duration) time.Duration {
		if pid <= 0 || before < 0 {
			return -1
		}
		now := pidCPU(pid)
		if now < 0 {
			return -1
		}
		return now - before
	}
	return CaptureCPU{Wave: benchkit.SelfCPU() - w.wave, Broker: since(w.brokerPid, w.broker), Source: since(w.sourcePid, w.source)}
}

// localPid is the pid of the process serving addr on this machine, or -1.
func localPid(addr string) int {
	pid, err := benchkit.AddrPID(addr)
	if err != nil {
		return -1
	}
	return pid
}

func pidCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	d, err := benchkit.ProcessCPU(pid)
	if err != nil {
		return -1
	}
	return d
}

// settle waits until the source server and the broker are idle (under settleCores
// over a settleWindow) or settleMax has passed, and says how long it waited. After the
// load, InnoDB flushes and purges for seconds and the broker may still be writing: the
// timed phases (the capture, then the reference) start from the same quiet machine
// instead of competing with the phase before for the two cores.
//
// It first flushes the machine's dirty pages (sync): the load leaves its binlog and
// table pages to be written back, and the kernel's writeback then competes with the
// timed phase. The same messages replayed to the broker cost it 0.09–0.79 s of CPU
// without a sync before each replay, 0.08–0.27 s with one.
func settle(ctx context.Context, opts Options, what string) {
	t := time.Now()
	syscall.Sync()
	fmt.Fprintf(opts.Out, "flushed the machine's written pages to disk (sync) in %s before the %s\n", time.Since(t).Round(time.Millisecond), what)
	const (
		settleWindow = 250 * time.Millisecond
		settleCores  = 0.05
		settleMax    = 20 * time.Second
	)
	pids := []int{localPid(opts.Addr), localPid(opts.Brokers[0])}
	t0 := time.Now()
	for time.Since(t0) < settleMax {
		before := make([]time.Duration, len(pids))
		for i, p := range pids {
			before[i] = pidCPU(p)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settleWindow):
		}
		busy := time.Duration(0)
		for i, p := range pids {
			if now := pidCPU(p); now >= 0 && before[i] >= 0 {
				busy += now - before[i]
			}
		}
		if busy.Seconds() < settleCores*settleWindow.Seconds() {
			fmt.Fprintf(opts.Out, "waited %s for the source server and the broker to go idle before the %s\n", time.Since(t0).Round(time.Millisecond), what)
			return
		}
	}
	fmt.Fprintf(opts.Out, "the source server and the broker were still busy after %s; starting the %s anyway\n", settleMax, what)
}
