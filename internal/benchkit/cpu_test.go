package benchkit

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a ')' is skipped whole; utime 250 + stime 50 ticks.
	line := "4242 (binlake (judge) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 9 0 100 0 0\n"
	got, err := ParseProcStat([]byte(line))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseProcStat = %s, %v; want 3s", got, err)
	}
	for _, bad := range []string{"", "4242 binlake S 1", "4242 (binlake) S 1 2 3", "4242 (b) S 1 2 3 4 5 6 7 8 9 10 x 50 0"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q): no error", bad)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 7 3 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte("1 (a) b) S"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if d, err := ParseProcStat(data); err == nil && d < 0 {
			t.Fatalf("negative CPU time %s from %q", d, data)
		}
	})
}

func TestListeningInodes(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1005310 1 0000000000000000 100 0 0 10 0
   1: 0100007F:2384 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000     0        0 1005999 1 0000000000000000 20 4 30 10 -1
   2: 00000000:12384 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0
   3: 0100007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 888 1 0000000000000000 100 0 0 10 0
`
	// Port 9092 is 2384 in hex: only the listening socket counts, not a connection on
	// that port, nor port 0x12384 or 80.
	got := listeningInodes([]byte(tcp), 9092)
	if len(got) != 1 || got[0] != "1005310" {
		t.Errorf("listeningInodes = %v, want [1005310]", got)
	}
	if got := listeningInodes([]byte("header only\n"), 9092); len(got) != 0 {
		t.Errorf("listeningInodes of no socket = %v", got)
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
