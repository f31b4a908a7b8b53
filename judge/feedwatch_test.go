package judge

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/judge/api"
)

// TestFeedStallKeepsNodesLive: while the metric bus does not answer, the nodes live when
// it last did stay live for placements, the listings and /readyz's report, until an
// answer says the subscription caught up; then staleness is on the clock again. An
// outside trial's judge refused every placement ("all 2 nodes filtered … stale") through
// its own broker's outage while the waves ran on.
func TestFeedStallKeepsNodesLive(t *testing.T) {
	j, c := newJudge(t, nil)
	for _, n := range []string{"wave-a", "wave-b"} {
		require.NoError(t, j.Ingest(load(n, c.Now(), 20, 30), sourceBus)) // every 10 s: stale after 30 s
	}
	place := func() (string, error) {
		ans, err := j.Place(api.PlacementRequest{Instance: "orders-2", DryRun: true})
		return ans.Node, err
	}
	start := c.Now()
	j.feedAnswer(bus.Position{Known: true, CaughtUp: true}, nil, start)
	down := errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
	// A failed question or two is no stall.
	j.feedAnswer(bus.Position{}, down, start.Add(time.Second))
	j.feedAnswer(bus.Position{}, down, start.Add(2*time.Second))
	require.True(t, j.feedStalledSince().IsZero(), "stalled after 2 s without an answer")
	j.feedAnswer(bus.Position{}, down, start.Add(3*time.Second))
	require.Equal(t, start.UTC(), j.feedStalledSince(), "the stall is as of the last answer")

	c.Add(time.Minute) // no batch for a minute: every node would be stale on the clock
	node, err := place()
	require.NoError(t, err, "a placement while the bus does not answer")
	require.Contains(t, []string{"wave-a", "wave-b"}, node)
	require.True(t, j.live(start, 10*time.Second, c.Now()), "a node live at the stall is listed live")
	rd := j.ready(storedWait)
	require.Equal(t, "ready", rd.Status)
	require.NotNil(t, rd.FeedStalledSince)
	require.Equal(t, start.UTC(), *rd.FeedStalledSince)

	// Back, but behind: still as of the stall, as the backlog holds the nodes' batches.
	j.feedAnswer(bus.Position{Known: true}, nil, start.Add(61*time.Second))
	_, err = place()
	require.NoError(t, err, "a placement while the subscription reads the outage's backlog")

	// Caught up: the nodes' minute of silence is theirs (a subscription that never says
	// so is released a minute after the bus answers again: below).
	j.feedAnswer(bus.Position{Known: true, CaughtUp: true}, nil, start.Add(62*time.Second))
	require.True(t, j.feedStalledSince().IsZero())
	_, err = place()
	require.Error(t, err, "nodes a minute silent with the bus answering are stale")
	require.Contains(t, err.Error(), "stale")
	require.Nil(t, j.ready(storedWait).FeedStalledSince)
}

// TestFeedStallEndsAMinuteAfterTheBusAnswers: a subscription that answers but never
// reports itself caught up (a stream faster than its commits) releases the hold a minute
// after its first answer, so that nodes that died meanwhile go stale.
func TestFeedStallEndsAMinuteAfterTheBusAnswers(t *testing.T) {
	j, c := newJudge(t, nil)
	start := c.Now()
	j.feedAnswer(bus.Position{Known: true, CaughtUp: true}, nil, start)
	j.feedAnswer(bus.Position{}, errors.New("down"), start.Add(feedStallAfter))
	require.False(t, j.feedStalledSince().IsZero())
	back := start.Add(time.Minute)
	j.feedAnswer(bus.Position{Known: true}, nil, back)
	j.feedAnswer(bus.Position{Known: true}, nil, back.Add(feedCatchUpMax-time.Second))
	require.False(t, j.feedStalledSince().IsZero(), "released before the minute")
	j.feedAnswer(bus.Position{Known: true}, nil, back.Add(feedCatchUpMax))
	require.True(t, j.feedStalledSince().IsZero(), "held past a minute of answers")
}
