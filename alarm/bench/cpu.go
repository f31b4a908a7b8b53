package bench

import (
	"fmt"
	"net"
	"strconv"
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
	w.brokerPID, w.brokerErr = brokerPID(broker)
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

// brokerPID finds the process serving broker (host:port) on this machine.
func brokerPID(broker string) (int, error) {
	host, p, err := net.SplitHostPort(broker)
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0, fmt.Errorf("broker %s: port %q", broker, p)
	}
	if !local(host) {
		return 0, fmt.Errorf("broker %s is not on this machine", broker)
	}
	return benchkit.ListenerPID(port)
}

// local says whether host names this machine: a loopback name or address, or one of its
// interfaces' addresses.
func local(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
