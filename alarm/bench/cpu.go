package bench

import (
	"time"

	"github.com/binlake/binlake/internal/benchkit"
)

// cpuWindow measures the CPU time of the alarm, the bench and the broker over a window.
type cpuWindow struct {
	a                       *alarmProc
	alarm0, bench0, broker0 time.Duration
	alarm, bench, broker    time.Duration
	alarmErr, brokerErr     error
	brokerPID               int
	brokerNote              string
}

// snapCPU starts the window. The broker is found by the listening port of broker (the
// first of -brokers), when that is an address of this machine.
func snapCPU(a *alarmProc, broker string) *cpuWindow {
	w := &cpuWindow{a: a, bench0: benchkit.SelfCPU()}
	w.alarm0, w.alarmErr = a.CPU()
	w.brokerPID, w.brokerErr = benchkit.AddrPID(broker)
	if w.brokerErr == nil {
		w.broker0, w.brokerErr = benchkit.ProcessCPU(w.brokerPID)
	}
	return w
}

// end closes the window; a figure that could not be read is negative.
func (w *cpuWindow) end() {
	w.bench = benchkit.SelfCPU() - w.bench0
	w.alarm, w.broker = -1, -1
	if a1, err := w.a.CPU(); err == nil && w.alarmErr == nil {
		w.alarm = a1 - w.alarm0
	}
	if w.brokerErr == nil {
		if b1, err := benchkit.ProcessCPU(w.brokerPID); err == nil {
			w.broker = b1 - w.broker0
		} else {
			w.brokerErr = err
		}
	}
	if w.brokerErr != nil {
		w.brokerNote = w.brokerErr.Error()
	}
}
