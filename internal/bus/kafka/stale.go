package kafka

import (
	"context"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// evictStale removes from the group the members this process's earlier Subscribe calls
// left behind: a call that ended while the broker was down could not leave, and after a
// broker restart the coordinator holds the next call's join until the old member's
// session times out (SessionTimeout, 10 s), for nothing, since that member is this
// process's and gone. kafka-go joins as a new member after every error, so the old
// member id is never reused. Best effort: failures only cost that wait.
func (s *subscriber) evictStale(ctx context.Context) {
	// Right after a restart the coordinator answers Broker Not Available or Coordinator
	// Load In Progress for a few seconds: ask again briefly before joining.
	var g kafkago.DescribeGroupsResponseGroup
	for pause := 100 * time.Millisecond; ; pause *= 2 {
		var err error
		if g, err = s.describeGroup(ctx); err == nil {
			break
		}
		if pause > 2*time.Second {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
	var stale []kafkago.LeaveGroupRequestMember
	for _, m := range g.Members {
		if processOf(m.ClientID) == s.process {
			stale = append(stale, kafkago.LeaveGroupRequestMember{ID: m.MemberID})
		}
	}
	if len(stale) == 0 {
		return
	}
	resp, err := s.b.client.LeaveGroup(ctx, &kafkago.LeaveGroupRequest{GroupID: s.opts.Group, Members: stale})
	if err == nil {
		err = resp.Error
	}
	log := s.b.log.With("topic", s.opts.Topic, "group", s.opts.Group, "members", len(stale))
	if err != nil {
		log.Debug("could not remove this process's earlier group members", "err", err)
		return
	}
	log.Info("removed this process's earlier group members, left behind by a broker outage")
}
