// Package httpload is the load generator's side of an HTTP/1.1 keep-alive connection:
// one request at a time on one TCP connection, parsed with net/http's own response
// reader. It exists because net/http's Client hands every request to two goroutines of
// its transport; measured in process next to the judge it took as much CPU per request
// as the judge answering it, so a benchmark measured mostly the client. wrk and hey play
// the same part outside Go.
package httpload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// Conn is one keep-alive connection to host. It is not safe for concurrent use: a load
// generator runs one Conn per worker. A connection the server closed is dialled again
// on the next request.
type Conn struct {
	host    string // host:port
	timeout time.Duration
	conn    net.Conn
	br      *bufio.Reader
	req     bytes.Buffer
	used    bool // the connection has answered before: the server may have closed it since
}

// Dial opens a connection to host (host:port). Every request must complete within
// timeout (dial, write, answer).
func Dial(host string, timeout time.Duration) (*Conn, error) {
	c := &Conn{host: host, timeout: timeout}
	if err := c.dial(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Conn) dial() error {
	conn, err := net.DialTimeout("tcp", c.host, c.timeout)
	if err != nil {
		return err
	}
	c.conn, c.used = conn, false
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, 16<<10)
	} else {
		c.br.Reset(conn)
	}
	return nil
}

// Post sends body to path as application/json and appends the answer's body to
// answer, returning the status code and the extended slice. When a kept-alive
// connection turns out closed before a byte of the answer came (the server's idle
// timeout), the request is sent once more on a new connection, as net/http's client
// does; any other failure closes the connection and is returned.
func (c *Conn) Post(path string, body, answer []byte) (int, []byte, error) {
	return c.PostAs(path, "Content-Type: application/json", body, answer)
}

// PostAs is Post with the request's header lines given (headers: "Name: value" lines
// joined by CRLF, without the last one), Content-Length aside.
func (c *Conn) PostAs(path, headers string, body, answer []byte) (int, []byte, error) {
	c.req.Reset()
	c.req.WriteString("POST ")
	c.req.WriteString(path)
	c.req.WriteString(" HTTP/1.1\r\nHost: ")
	c.req.WriteString(c.host)
	c.req.WriteString("\r\n")
	c.req.WriteString(headers)
	c.req.WriteString("\r\nContent-Length: ")
	c.req.WriteString(strconv.Itoa(len(body)))
	c.req.WriteString("\r\n\r\n")
	c.req.Write(body)
	reused := c.conn != nil && c.used
	code, answer, err := c.roundTrip(answer)
	if err != nil && reused && errors.Is(err, errClosedEarly) {
		code, answer, err = c.roundTrip(answer)
	}
	return code, answer, err
}

// errClosedEarly is a connection that ended before the answer's first byte.
var errClosedEarly = errors.New("connection closed before the answer")

func (c *Conn) roundTrip(answer []byte) (int, []byte, error) {
	if c.conn == nil {
		if err := c.dial(); err != nil {
			return 0, answer, err
		}
	}
	c.conn.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write(c.req.Bytes()); err != nil {
		c.Close()
		return 0, answer, fmt.Errorf("%w: write: %w", errClosedEarly, err)
	}
	if _, err := c.br.Peek(1); err != nil {
		c.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			err = fmt.Errorf("%w: %w", errClosedEarly, err)
		}
		return 0, answer, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.Close()
		return 0, answer, fmt.Errorf("read answer: %w", err)
	}
	answer, err = readAll(resp.Body, answer)
	resp.Body.Close()
	if err != nil {
		c.Close()
		return 0, answer, fmt.Errorf("read answer body: %w", err)
	}
	c.used = true
	if resp.Close {
		c.Close()
	}
	return resp.StatusCode, answer, nil
}

// readAll appends r to b, growing it only when full.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Close closes the connection; the next request dials again.
func (c *Conn) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}
