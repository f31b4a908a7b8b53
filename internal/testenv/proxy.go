package testenv

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards connections from a loopback port to a target service and can be taken
// down and brought back on the same port. A test uses it to give one client an outage of
// a shared service (refused connections, cut ones) while the service keeps serving the
// other tests that share it.
type Proxy struct {
	addr string
	pipe func(client, server net.Conn)

	mu     sync.Mutex
	target string
	ln     net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Copy is the plain pipe: bytes both ways until either side ends.
func Copy(client, server net.Conn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(server, client); done <- struct{}{} }()
	go func() { io.Copy(client, server); done <- struct{}{} }()
	<-done // either side ended: end both
	client.Close()
	server.Close()
	<-done
}

// StartProxy listens on a free loopback port and forwards every connection to target
// through pipe (Copy, or one that reads the protocol), which returns when the connection
// is over; the proxy then closes both sides. The proxy goes down when the test ends.
func StartProxy(t testing.TB, target string, pipe func(client, server net.Conn)) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy to %s: %v", target, err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), pipe: pipe, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() { p.Down(); p.wg.Wait() })
	return p
}

// Addr is where the proxy listens, host:port.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Down
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.handle(c) }()
		}
	}()
}

// track registers c unless the proxy went down meanwhile.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Proxy) handle(client net.Conn) {
	if !p.track(client) {
		client.Close()
		return
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	server, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		p.untrack(client)
		return
	}
	if !p.track(server) {
		p.untrack(client, server)
		return
	}
	p.pipe(client, server)
	p.untrack(client, server)
}

// Down refuses new connections and cuts the open ones.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Switch moves the proxy to another target, the way a virtual IP or a proxy moves to
// another server: the open connections are cut, new ones reach target.
func (p *Proxy) Switch(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Up listens on the proxy's port again.
func (p *Proxy) Up() error {
	var err error
	for range 50 { // the port is ours, but its last connections may still be closing
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("proxy: listen on %s again: %w", p.addr, err)
}
