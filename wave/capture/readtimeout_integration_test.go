package capture

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// slowDumpPipe forwards a MySQL protocol connection and holds the server's bytes for
// delay after the client asks for the binlog (COM_BINLOG_DUMP or _GTID): a source that
// reads a long binlog file from the top to find the start of a GTID position and sends
// nothing meanwhile. Queries before the dump go through at once.
func slowDumpPipe(delay time.Duration, dumps *atomic.Int32) func(client, server net.Conn) {
	return func(client, server net.Conn) {
		var dumpAt atomic.Int64
		done := make(chan struct{}, 2)
		go func() { // client to server, packet by packet
			defer func() { done <- struct{}{} }()
			var hdr [4]byte
			for {
				if _, err := io.ReadFull(client, hdr[:]); err != nil {
					return
				}
				body := make([]byte, int(binary.LittleEndian.Uint32(append(hdr[:3:3], 0))))
				if _, err := io.ReadFull(client, body); err != nil {
					return
				}
				if hdr[3] == 0 && len(body) > 0 && (body[0] == 0x12 || body[0] == 0x1e) {
					dumps.Add(1)
					dumpAt.Store(time.Now().UnixNano())
				}
				if _, err := server.Write(append(hdr[:], body...)); err != nil {
					return
				}
			}
		}()
		go func() { // server to client, held once the dump was asked for
			defer func() { done <- struct{}{} }()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 {
					if at := dumpAt.Load(); at != 0 {
						time.Sleep(time.Until(time.Unix(0, at).Add(delay)))
					}
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		<-done
		client.Close()
		server.Close()
		<-done
	}
}

// TestSlowStartOfTheStreamIntegration: a source that takes longer than the read timeout
// to start sending the binlog (7 s here, against the 5.3 s of three 100 ms heartbeats
// and 5 s) is waited for longer at the next connection, and the rows come; at the same
// timeout every attempt would time out in the same search, for ever.
func TestSlowStartOfTheStreamIntegration(t *testing.T) {
	a, ctx := testenv.RequireMySQL(t), testenv.Context(t)
	db, exec, start := tableAt(t, ctx, a, "wave_slow_start", "(id INT PRIMARY KEY)")
	exec("INSERT INTO " + db + ".t VALUES (1)")
	var dumps atomic.Int32
	proxy := testenv.StartProxy(t, a.Addr, slowDumpPipe(7*time.Second, &dumps))
	via := a
	via.Addr = proxy.Addr()
	out := make(chan Item, 64)
	c := newTestCapture(t, via, "slow", 47202, out, []cluster.Subscription{{Name: "s", Topic: "rows", Include: []string{db + `\.t`}}}, start)
	var logs testenv.SyncBuffer
	c.Log = slog.New(slog.NewTextHandler(&logs, nil))
	c.Heartbeat = 100 * time.Millisecond
	go c.Run(ctx)
	deadline := time.After(45 * time.Second)
	for {
		select {
		case it := <-out:
			if len(it.Msgs) == 0 {
				continue
			}
			if v := string(it.Msgs[0].Value); !strings.Contains(v, `"id":1`) {
				t.Fatalf("row: %s", v)
			}
			if n := dumps.Load(); n < 2 {
				t.Errorf("the row came in %d binlog session(s); want the first to time out", n)
			}
			if !strings.Contains(logs.String(), "the next connection waits longer") {
				t.Errorf("no word of the longer wait in the log:\n%s", logs.String())
			}
			return
		case <-deadline:
			t.Fatalf("no row after 45 s and %d binlog sessions:\n%s", dumps.Load(), logs.String())
		}
	}
}
