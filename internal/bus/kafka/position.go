package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/bus"
)

var _ bus.Positioner = (*subscriber)(nil)

// memberClientID names a subscriber's process to the group coordinator: its Subscribe
// calls join as memberClientID-<call>. kafka-go does not expose the member id it joined
// with, so Position finds its member in DescribeGroups by the client id.
func memberClientID(base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return base + "-" + hex.EncodeToString(b[:])
}

// processOf is the process part of a member's client id (up to the call number).
func processOf(clientID string) string {
	if i := strings.LastIndexByte(clientID, '-'); i > 0 {
		return clientID[:i]
	}
	return clientID
}

// Position asks the group coordinator which partitions this member holds (kafka-go's
// Reader does not say), then compares the group's committed offsets with the partitions'
// ends: the member is caught up when it committed everything that was in its partitions
// at the previous call, so a steady stream of new messages does not count as lag.
func (s *subscriber) Position(ctx context.Context) (bus.Position, error) {
	s.mu.Lock()
	id := s.clientID
	s.mu.Unlock()
	if id == "" {
		return bus.Position{}, nil
	}
	g, err := s.describeGroup(ctx)
	if err != nil {
		return bus.Position{}, err
	}
	var parts []int
	found := false
	procs := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		procs = append(procs, processOf(m.ClientID))
		if m.ClientID != id {
			continue
		}
		found = true
		for _, t := range m.MemberAssignments.Topics {
			if t.Topic == s.opts.Topic {
				parts = append(parts, t.Partitions...)
			}
		}
	}
	if g.GroupState != "Stable" || !found {
		s.resetEnds()
		return bus.Position{}, nil
	}
	slices.Sort(parts)
	slices.Sort(procs)
	pos := bus.Position{Known: true, Partitions: parts, Process: s.process, Processes: slices.Compact(procs)}
	if len(parts) == 0 {
		s.resetEnds()
		pos.CaughtUp = true
		return pos, nil
	}
	committed, err := s.b.client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: s.opts.Group, Topics: map[string][]int{s.opts.Topic: parts}})
	if err == nil && committed.Error != nil {
		err = committed.Error
	}
	if err != nil {
		return bus.Position{}, fmt.Errorf("fetch offsets of group %s: %w", s.opts.Group, err)
	}
	reqs := make([]kafkago.OffsetRequest, len(parts))
	for i, p := range parts {
		reqs[i] = kafkago.LastOffsetOf(p)
	}
	ends, err := s.b.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{s.opts.Topic: reqs}})
	if err != nil {
		return bus.Position{}, fmt.Errorf("list offsets of %s: %w", s.opts.Topic, err)
	}
	now := map[int]int64{}
	for _, po := range ends.Topics[s.opts.Topic] {
		if po.Error != nil {
			return bus.Position{}, fmt.Errorf("list offsets of %s partition %d: %w", s.opts.Topic, po.Partition, po.Error)
		}
		now[po.Partition] = po.LastOffset
	}
	done := map[int]int64{}
	for _, po := range committed.Topics[s.opts.Topic] {
		if po.Error != nil {
			return bus.Position{}, fmt.Errorf("fetch offsets of group %s partition %d: %w", s.opts.Group, po.Partition, po.Error)
		}
		done[po.Partition] = po.CommittedOffset
	}
	s.mu.Lock()
	prev := s.ends
	s.ends = now
	s.mu.Unlock()
	pos.CaughtUp = true
	for _, p := range parts {
		end, ok := prev[p]
		if !ok {
			pos.CaughtUp = false // newly assigned: judge it at the next call
			continue
		}
		// A group that never committed a partition reports -1; an empty one has end 0.
		if end > 0 && done[p] < end {
			pos.CaughtUp = false
		}
	}
	return pos, nil
}

func (s *subscriber) resetEnds() {
	s.mu.Lock()
	s.ends = nil
	s.mu.Unlock()
}

// describeGroup is the coordinator's description of the subscriber's group.
func (s *subscriber) describeGroup(ctx context.Context) (kafkago.DescribeGroupsResponseGroup, error) {
	gr, err := s.b.client.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{s.opts.Group}})
	if err != nil {
		return kafkago.DescribeGroupsResponseGroup{}, fmt.Errorf("describe group %s: %w", s.opts.Group, err)
	}
	if len(gr.Groups) != 1 || gr.Groups[0].Error != nil {
		var gerr error
		if len(gr.Groups) == 1 {
			gerr = gr.Groups[0].Error
		}
		return kafkago.DescribeGroupsResponseGroup{}, fmt.Errorf("describe group %s: %w", s.opts.Group, errors.Join(gerr, errors.New("no answer for the group")))
	}
	return gr.Groups[0], nil
}
