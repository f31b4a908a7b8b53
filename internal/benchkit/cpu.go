package benchkit

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// ProcessCPU is a process's CPU time so far (user + system), from /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}

// SelfCPU is this process's CPU time so far (user + system).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// AddrPID finds the process serving addr (host:port) on this machine, as ListenerPID
// does; an address of another machine is an error saying so.
func AddrPID(addr string) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0, fmt.Errorf("%s: port %q", addr, p)
	}
	if !local(host) {
		return 0, fmt.Errorf("%s is not on this machine", addr)
	}
	return ListenerPID(port)
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

// ListenerPID finds the process listening on a local TCP port: the socket's inode in
// /proc/net/tcp and tcp6, then the process holding a descriptor of it. It only sees
// processes whose /proc/<pid>/fd this user may read.
func ListenerPID(port int) (int, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			continue // no IPv6, say
		}
		for _, l := range lines {
			if l.St == tcpListen && l.LocalPort == uint64(port) {
				want[fmt.Sprintf("socket:[%d]", l.Inode)] = true
			}
		}
	}
	if len(want) == 0 {
		return 0, fmt.Errorf("no local socket listens on port %d", port)
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		targets, err := p.FileDescriptorTargets()
		if err != nil {
			continue // a process of another user, or gone
		}
		for _, t := range targets {
			if want[t] {
				return p.PID, nil
			}
		}
	}
	return 0, fmt.Errorf("port %d listens, but no readable /proc/<pid>/fd holds its socket", port)
}

// tcpListen is the state of a socket in the LISTEN state (TCP_LISTEN).
const tcpListen = 0x0A
