package benchkit

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestProcessCPU: this process's CPU time read from /proc grows with work, and agrees
// with getrusage.
func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for x, start := 0, SelfCPU(); SelfCPU()-start < 50*time.Millisecond; x++ {
		_ = x * x
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self := SelfCPU()
	if after-before < 30*time.Millisecond || after > self+20*time.Millisecond {
		t.Errorf("CPU %v → %v over 50 ms of work, getrusage %v", before, after, self)
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Error("ProcessCPU of no process: no error")
	}
}

func TestListenerPID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := ListenerPID(port)
	if err != nil || pid != os.Getpid() {
		t.Errorf("ListenerPID(%d) = %d, %v; want this process, %d", port, pid, err, os.Getpid())
	}
	ln.Close()
	if pid, err := ListenerPID(port); err == nil {
		t.Errorf("ListenerPID of a closed port = %d, want an error", pid)
	}
}

func TestAddrPID(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "192.0.2.7": false, "kafka.example": false} {
		if got := local(host); got != want {
			t.Errorf("local(%q) = %v, want %v", host, got, want)
		}
	}
	if _, err := AddrPID("192.0.2.7:9092"); err == nil || !strings.Contains(err.Error(), "not on this machine") {
		t.Errorf("AddrPID of a remote broker: %v", err)
	}
	if _, err := AddrPID("127.0.0.1:x"); err == nil || !strings.Contains(err.Error(), `port "x"`) {
		t.Errorf("AddrPID of a bad port: %v", err)
	}
}
