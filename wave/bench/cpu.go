package bench

import (
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

// startCPU finds the broker and the source server by their listening ports on this
// machine and reads every process's CPU.
func startCPU(opts Options) *cpuWatch {
	w := &cpuWatch{brokerPid: localPid(opts.Brokers[0]), sourcePid: localPid(opts.Addr)}
	w.wave, w.broker, w.source = benchkit.SelfCPU(), pidCPU(w.brokerPid), pidCPU(w.sourcePid)
	return w
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
