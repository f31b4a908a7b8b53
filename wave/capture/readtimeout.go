package capture

import (
	"errors"
	"net"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// maxReadTimeout bounds how long a session waits for the source's next packet after
// slow starts (readTimeout).
const maxReadTimeout = 2 * time.Minute

// readTimeout is how long a binlog session waits for the source's next packet before it
// takes the connection for dead: three heartbeats and 5 s, doubled for each session in a
// row that timed out before the source sent anything past the stream's first events, up
// to maxReadTimeout. A source looks for the start of a GTID position by reading its
// binlog file from the top, sending nothing meanwhile: in a long file on a slow or cold
// disk that takes longer than three heartbeats (a trial on a 126 MB file: 11 s), and
// each attempt at the same timeout would read the file again and fail again.
func (c *Capture) readTimeout() time.Duration {
	base := 3*c.Heartbeat + 5*time.Second
	return min(base<<c.slowStarts, max(base, maxReadTimeout))
}

// sessionEnded updates the read timeout of the next session: reset by a session in which
// the source sent more than the stream's first events, raised after one that timed out
// before it did.
func (c *Capture) sessionEnded(progressed bool, err error) {
	switch {
	case progressed:
		c.slowStarts = 0
	case isTimeout(err) && c.readTimeout() < maxReadTimeout:
		c.slowStarts++
		c.Log.Info("the source sent nothing past the start of the stream before the read timeout (finding a GTID position in a long binlog file?); the next connection waits longer",
			"read_timeout", c.readTimeout())
	}
}

// connected reports whether ev is the session's first past the stream's start, and
// records in progressed that one came. The session counts as connected (the instance as
// running) from then: a source that refuses the session (another replica with this
// server_id) sends the start events, then its error, and the instance read as running in
// between, so an alert on it resolved and paged again at every reconnect (an outside
// trial).
func connected(progressed *bool, ev *replication.BinlogEvent) bool {
	if *progressed || startEvent(ev) {
		return false
	}
	*progressed = true
	return true
}

// startEvent says whether ev is one a source sends as a stream starts, before it has
// found the position asked for: the (fake) rotate, the format description, the GTID
// list or set of the file, a checkpoint.
func startEvent(ev *replication.BinlogEvent) bool {
	switch ev.Event.(type) {
	case *replication.RotateEvent, *replication.FormatDescriptionEvent, *replication.MariadbGTIDListEvent,
		*replication.MariadbBinlogCheckPointEvent, *replication.PreviousGTIDsEvent:
		return true
	}
	return false
}

// isTimeout says whether err is a read that timed out (go-mysql's annotations keep the
// net error's text, not always the error).
func isTimeout(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "i/o timeout")
}
