package capture

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// A session is connected at its first event past the stream's start, once: the start
// events a source sends before refusing the session (another replica with this
// server_id) made the instance read as running between reconnects, and an alert on it
// resolved and paged again at every one (an outside trial).
func TestConnectedPastTheStreamsStart(t *testing.T) {
	ev := func(e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{}, Event: e}
	}
	progressed := false
	for i, c := range []struct {
		ev   *replication.BinlogEvent
		want bool
	}{
		{ev(&replication.RotateEvent{}), false},
		{ev(&replication.FormatDescriptionEvent{}), false},
		{ev(&replication.MariadbGTIDListEvent{}), false},
		{ev(&replication.MariadbBinlogCheckPointEvent{}), false},
		{ev(&replication.HeartbeatEvent{}), true}, // an idle source's first sign of the stream
		{ev(&replication.QueryEvent{}), false},    // once per session
	} {
		if got := connected(&progressed, c.ev); got != c.want {
			t.Errorf("event %d (%T): connected %v, want %v", i, c.ev.Event, got, c.want)
		}
	}
}
