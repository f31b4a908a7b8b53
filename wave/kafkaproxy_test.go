package wave_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

// kafkaProxy is a TCP proxy in front of one Kafka broker that the test can take down and
// bring back, to give one client (a wave process) a Kafka outage while the shared broker
// keeps serving every other test.
//
// A plain proxy would not do: a Kafka client bootstraps through the address it was given
// and then connects to the brokers the Metadata response advertises (here the real
// 127.0.0.1:9092), bypassing the proxy. So the proxy rewrites the port of the advertised
// broker in Metadata responses to its own: same host, same field length, nothing else in
// the response moves. Every later connection of the client then goes through the proxy
// too, and rewrites counts the responses rewritten (a test asserts it is non-zero).
//
// Only the Metadata API (key 3) carries broker addresses a producer uses; FindCoordinator
// (key 10) does too but only consumer groups ask it. Metadata versions 0-12 are parsed,
// the flexible ones (9+) included; kafka-go asks at most v8.
type kafkaProxy struct {
	*testenv.Proxy
	t      testing.TB
	upPort int32  // the broker's port, 9092
	addr   string // where the proxy listens
	// port is addr's port, set once the proxy listens; atomic because pipe reads it on
	// the proxy's goroutines.
	port atomic.Int32

	rewrites atomic.Int64
}

func newKafkaProxy(t testing.TB, upstream string) *kafkaProxy {
	t.Helper()
	_, ps, err := net.SplitHostPort(upstream)
	if err != nil {
		t.Fatalf("kafka proxy: upstream %q: %v", upstream, err)
	}
	up, _ := strconv.Atoi(ps)
	p := &kafkaProxy{t: t, upPort: int32(up)}
	p.Proxy = testenv.StartProxy(t, upstream, p.pipe)
	p.addr = p.Proxy.Addr()
	_, ps, _ = net.SplitHostPort(p.addr)
	port, _ := strconv.Atoi(ps)
	p.port.Store(int32(port))
	return p
}

// down closes the listener and every connection: the client sees connection refused
// until up.
func (p *kafkaProxy) down() { p.Down() }

// up listens again on the same address.
func (p *kafkaProxy) up() {
	p.t.Helper()
	if err := p.Up(); err != nil {
		p.t.Fatalf("kafka proxy: %v", err)
	}
}

// pipe forwards frames both ways, rewriting the advertised broker port in Metadata
// responses, until one side ends; the proxy then closes both.
func (p *kafkaProxy) pipe(client, server net.Conn) {
	// Requests name their API and version; responses only the correlation id.
	var mu sync.Mutex
	pending := map[int32][2]int16{} // correlation id → api key, version
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			frame, err := readFrame(client)
			if err != nil {
				return
			}
			if len(frame) >= 8 {
				key := int16(binary.BigEndian.Uint16(frame[0:]))
				ver := int16(binary.BigEndian.Uint16(frame[2:]))
				corr := int32(binary.BigEndian.Uint32(frame[4:]))
				if key == 3 {
					mu.Lock()
					pending[corr] = [2]int16{key, ver}
					mu.Unlock()
				}
			}
			if writeFrame(server, frame) != nil {
				return
			}
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			frame, err := readFrame(server)
			if err != nil {
				return
			}
			if len(frame) >= 4 {
				corr := int32(binary.BigEndian.Uint32(frame))
				mu.Lock()
				req, ok := pending[corr]
				delete(pending, corr)
				mu.Unlock()
				if ok {
					if err := rewriteMetadata(frame, req[1], p.upPort, p.port.Load()); err != nil {
						p.t.Errorf("kafka proxy: %v", err)
						return
					}
					p.rewrites.Add(1)
				}
			}
			if writeFrame(client, frame) != nil {
				return
			}
		}
	}()
	<-done // one side ended: end both
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 100<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func writeFrame(w io.Writer, b []byte) error {
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(b)))
	if _, err := w.Write(size[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

var errShort = errors.New("metadata response too short")

// rewriteMetadata replaces, in place, the port of every advertised broker whose port is
// from with to. b is a Metadata response frame (after the size) of version v.
func rewriteMetadata(b []byte, v int16, from, to int32) error {
	flexible := v >= 9
	off := 4 // correlation id
	uvarint := func() (uint64, error) {
		if off < 0 || off >= len(b) {
			return 0, errShort
		}
		x, n := binary.Uvarint(b[off:])
		if n <= 0 {
			return 0, errShort
		}
		off += n
		return x, nil
	}
	skipTags := func() error {
		n, err := uvarint()
		if err != nil {
			return err
		}
		for range n {
			if _, err := uvarint(); err != nil { // tag
				return err
			}
			size, err := uvarint()
			if err != nil {
				return err
			}
			off += int(size)
		}
		return nil
	}
	need := func(n int) error {
		if off+n > len(b) {
			return errShort
		}
		return nil
	}
	if flexible {
		if err := skipTags(); err != nil { // response header v1
			return err
		}
	}
	if v >= 3 {
		off += 4 // throttle_time_ms
	}
	var brokers int
	if flexible {
		n, err := uvarint()
		if err != nil {
			return err
		}
		brokers = int(n) - 1
	} else {
		if err := need(4); err != nil {
			return err
		}
		brokers = int(int32(binary.BigEndian.Uint32(b[off:])))
		off += 4
	}
	if brokers < 0 || brokers > len(b) {
		return fmt.Errorf("metadata response: %d brokers", brokers)
	}
	for range brokers {
		off += 4 // node_id
		var hostLen int
		if flexible {
			n, err := uvarint()
			if err != nil {
				return err
			}
			hostLen = int(n) - 1
		} else {
			if err := need(2); err != nil {
				return err
			}
			hostLen = int(int16(binary.BigEndian.Uint16(b[off:])))
			off += 2
		}
		if hostLen < 0 {
			return fmt.Errorf("metadata response: host length %d", hostLen)
		}
		off += hostLen
		if err := need(4); err != nil {
			return err
		}
		if int32(binary.BigEndian.Uint32(b[off:])) == from {
			binary.BigEndian.PutUint32(b[off:], uint32(to))
		}
		off += 4
		if v >= 1 { // rack, nullable
			if flexible {
				n, err := uvarint()
				if err != nil {
					return err
				}
				if n > 0 {
					off += int(n) - 1
				}
			} else {
				if err := need(2); err != nil {
					return err
				}
				n := int(int16(binary.BigEndian.Uint16(b[off:])))
				off += 2
				if n > 0 {
					off += n
				}
			}
		}
		if flexible {
			if err := skipTags(); err != nil {
				return err
			}
		}
		if off > len(b) {
			return errShort
		}
	}
	return nil
}

// TestRewriteMetadata checks the proxy's rewrite on hand-built responses of the classic
// and the flexible encodings, and that truncated ones are errors, not panics.
func TestRewriteMetadata(t *testing.T) {
	type broker struct {
		host string
		port int32
		rack *string
	}
	rack := "r1"
	encode := func(v int16, brokers []broker) []byte {
		var b []byte
		b = binary.BigEndian.AppendUint32(b, 77) // correlation id
		flex := v >= 9
		if flex {
			b = append(b, 0) // header tags
		}
		if v >= 3 {
			b = binary.BigEndian.AppendUint32(b, 0)
		}
		if flex {
			b = binary.AppendUvarint(b, uint64(len(brokers)+1))
		} else {
			b = binary.BigEndian.AppendUint32(b, uint32(len(brokers)))
		}
		for i, br := range brokers {
			b = binary.BigEndian.AppendUint32(b, uint32(i+1))
			if flex {
				b = binary.AppendUvarint(b, uint64(len(br.host)+1))
			} else {
				b = binary.BigEndian.AppendUint16(b, uint16(len(br.host)))
			}
			b = append(b, br.host...)
			b = binary.BigEndian.AppendUint32(b, uint32(br.port))
			if v >= 1 {
				switch {
				case flex && br.rack == nil:
					b = append(b, 0)
				case flex:
					b = binary.AppendUvarint(b, uint64(len(*br.rack)+1))
					b = append(b, *br.rack...)
				case br.rack == nil:
					b = binary.BigEndian.AppendUint16(b, 0xffff)
				default:
					b = binary.BigEndian.AppendUint16(b, uint16(len(*br.rack)))
					b = append(b, *br.rack...)
				}
			}
			if flex {
				b = append(b, 1, 5, 2, 0xaa, 0xbb) // one tagged field, tag 5, 2 bytes
			}
		}
		return append(b, "rest of the response"...)
	}
	brokers := []broker{{"127.0.0.1", 9092, nil}, {"kafka-2.example", 9093, &rack}, {"127.0.0.1", 9092, &rack}}
	for _, v := range []int16{0, 1, 3, 8, 9, 12} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			b := encode(v, brokers)
			if err := rewriteMetadata(b, v, 9092, 41000); err != nil {
				t.Fatal(err)
			}
			want := []broker{{"127.0.0.1", 41000, nil}, {"kafka-2.example", 9093, &rack}, {"127.0.0.1", 41000, &rack}}
			if got, exp := b, encode(v, want); string(got) != string(exp) {
				t.Fatalf("rewritten\n got %x\nwant %x", got, exp)
			}
			for n := range len(b) - len("rest of the response") {
				if err := rewriteMetadata(b[:n], v, 9092, 41000); err == nil {
					t.Fatalf("truncated to %d bytes: no error", n)
				}
			}
		})
	}
}
