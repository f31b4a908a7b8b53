package benchkit

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessCPU is a process's CPU time so far (user + system), from /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseProcStat(data)
}

// clockTick is USER_HZ, the unit of utime and stime: 100 on every Linux ABI Go runs on.
const clockTick = 10 * time.Millisecond

// ParseProcStat reads utime + stime (fields 14 and 15) from a /proc/<pid>/stat line.
// The command name (field 2) is in parentheses and may hold spaces and ')', so fields
// are counted from the last ')'.
func ParseProcStat(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("proc stat: no ')' closing the command name")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("proc stat: utime/stime %q is not a tick count", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
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
	var inodes []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // no IPv6, say
		}
		inodes = append(inodes, listeningInodes(data, port)...)
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no local socket listens on port %d", port)
	}
	want := map[string]bool{}
	for _, in := range inodes {
		want["socket:["+in+"]"] = true
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && want[l] {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("port %d listens, but no readable /proc/<pid>/fd holds its socket", port)
}

// tcpListen is the st column of a socket in the LISTEN state.
const tcpListen = "0A"

// listeningInodes returns the inodes of the sockets listening on port in the text of
// /proc/net/tcp or tcp6 ("sl local_address rem_address st … inode …", addresses as
// hex IP:hex port).
func listeningInodes(data []byte, port int) []string {
	suffix := fmt.Sprintf(":%04X", port)
	var out []string
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != tcpListen || !strings.HasSuffix(f[1], suffix) {
			continue
		}
		out = append(out, f[9])
	}
	return out
}
