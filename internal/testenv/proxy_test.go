package testenv

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line, on a loopback port; a non-empty
// banner is sent first, as a line, to tell servers apart.
func echoServer(t *testing.T, banner string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if banner != "" {
					if _, err := c.Write([]byte(banner + "\n")); err != nil {
						return
					}
				}
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func echo(t *testing.T, c net.Conn, r *bufio.Reader, msg string) error {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return err
	}
	got, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if got != msg+"\n" {
		t.Fatalf("echo through the proxy: got %q, want %q", got, msg+"\n")
	}
	return nil
}

// TestProxyDownUp checks that the proxy forwards, that Down cuts open connections and
// refuses new ones, and that Up serves again on the same address.
func TestProxyDownUp(t *testing.T) {
	p := StartProxy(t, echoServer(t, ""), Copy)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if err := echo(t, c, r, "before"); err != nil {
		t.Fatalf("through the proxy before Down: %v", err)
	}

	p.Down()
	if err := echo(t, c, r, "during"); err == nil {
		t.Fatal("a connection open before Down still works after it")
	}
	if d, err := net.Dial("tcp", p.Addr()); err == nil {
		d.Close()
		t.Fatal("the proxy accepted a connection while down")
	}

	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial after Up: %v", err)
	}
	defer c2.Close()
	if err := echo(t, c2, bufio.NewReader(c2), "after"); err != nil {
		t.Fatalf("through the proxy after Up: %v", err)
	}
}

// TestProxySwitch checks that Switch cuts the open connections and sends new ones to the
// new target.
func TestProxySwitch(t *testing.T) {
	p := StartProxy(t, echoServer(t, "a"), Copy)
	banner := func(c net.Conn, r *bufio.Reader) string {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read the banner: %v", err)
		}
		return line
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got := banner(c, r); got != "a\n" {
		t.Fatalf("before Switch: banner %q, want a", got)
	}

	p.Switch(echoServer(t, "b"))
	if err := echo(t, c, r, "during"); err == nil {
		t.Fatal("a connection open before Switch still works after it")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial after Switch: %v", err)
	}
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	if got := banner(c2, r2); got != "b\n" {
		t.Fatalf("after Switch: banner %q, want b", got)
	}
	if err := echo(t, c2, r2, "after"); err != nil {
		t.Fatalf("through the proxy after Switch: %v", err)
	}
}
