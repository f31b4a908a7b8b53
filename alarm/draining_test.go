package alarm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/coord"
)

// groupSubscriber is a consumer-group member as far as the alarm sees one: it names its
// process (Position) and, when the alarm's subscription ends (it leaves the group), it
// records who stood in DrainingGroup at that moment.
type groupSubscriber struct {
	c        coord.Coordinator
	atLeave  chan []coord.Member
	position bus.Position
}

func (s *groupSubscriber) Subscribe(ctx context.Context, _ bus.Handler) error {
	<-ctx.Done()
	ms, _ := s.c.Members(context.Background(), DrainingGroup)
	s.atLeave <- ms
	return nil
}
func (s *groupSubscriber) Close() error                                   { return nil }
func (s *groupSubscriber) Position(context.Context) (bus.Position, error) { return s.position, nil }

// A stopping alarm process in a consumer group stands in DrainingGroup, under the name
// its claims carry, before it leaves the group (so that the process taking its
// partitions over sees its claims as being delivered), and no longer once its stop is
// done.
func TestStopMarksTheProcessDrainingBeforeLeavingTheGroup(t *testing.T) {
	c := openCoord(t, t.TempDir())
	sub := &groupSubscriber{c: c, atLeave: make(chan []coord.Member, 1),
		position: bus.Position{Known: true, Partitions: []int{0}, CaughtUp: true, Process: "alarm-a", Processes: []string{"alarm-a"}}}
	a, err := New(Options{Policies: parsePolicies(t, basePolicy), Channels: map[string]notify.Notifier{"c": notify.Log{L: quiet}},
		Subscriber: sub, Coordinator: c, EvalInterval: 50 * time.Millisecond, PositionInterval: 20 * time.Millisecond, Logger: quiet})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	require.Eventually(t, func() bool { return a.eng.claimer() == "alarm-a" }, 5*time.Second, 10*time.Millisecond, "the group's answer names the process")
	cancel()
	select {
	case ms := <-sub.atLeave:
		require.Equal(t, []coord.Member{{ID: "alarm-a", Data: []byte{}}}, normalise(ms), "marked draining as it left the group")
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription did not end")
	}
	require.NoError(t, <-done)
	require.Eventually(t, func() bool {
		ms, err := c.Members(context.Background(), DrainingGroup)
		return err == nil && len(ms) == 0
	}, 5*time.Second, 10*time.Millisecond, "the mark ends with the stop")
}

// normalise makes a nil Data an empty one, as coordinators differ there.
func normalise(ms []coord.Member) []coord.Member {
	for i := range ms {
		if ms[i].Data == nil {
			ms[i].Data = []byte{}
		}
	}
	return ms
}
