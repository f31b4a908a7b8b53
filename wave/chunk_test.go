package wave

import (
	"fmt"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/bus"
)

func TestChunks(t *testing.T) {
	msg := func(topic string, size int) bus.Message {
		return bus.Message{Topic: topic, Key: []byte("k"), Value: []byte(strings.Repeat("v", size-1-recordOverhead))}
	}
	// sizes are total counted sizes (key 1 byte + value + overhead)
	tests := []struct {
		name     string
		msgs     []bus.Message
		maxMsgs  int
		maxBytes int64
		want     []int // chunk lengths
	}{
		{"unbounded", []bus.Message{msg("a", 100), msg("a", 100), msg("b", 100)}, 0, 0, []int{3}},
		{"fits", []bus.Message{msg("a", 100), msg("b", 100), msg("a", 100)}, 2, 0, []int{3}},
		{"count per topic", []bus.Message{msg("a", 100), msg("a", 100), msg("a", 100), msg("b", 100), msg("a", 100)}, 2, 0, []int{2, 3}},
		{"other topic does not count", []bus.Message{msg("a", 100), msg("b", 100), msg("b", 100), msg("a", 100), msg("b", 100)}, 2, 0, []int{4, 1}},
		{"bytes per topic", []bus.Message{msg("a", 100), msg("a", 100), msg("a", 100)}, 0, 250, []int{2, 1}},
		{"exact bytes", []bus.Message{msg("a", 100), msg("a", 100), msg("a", 100)}, 0, 200, []int{2, 1}},
		{"one message above the bound goes alone", []bus.Message{msg("a", 100), msg("a", 500), msg("a", 100)}, 0, 250, []int{1, 1, 1}},
		{"both bounds", []bus.Message{msg("a", 50), msg("a", 50), msg("a", 50), msg("a", 200), msg("a", 40)}, 3, 260, []int{3, 2}},
		{"empty", nil, 2, 0, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := chunks(tc.msgs, tc.maxMsgs, tc.maxBytes)
			var lens []int
			var flat []bus.Message
			for _, c := range got {
				lens = append(lens, len(c))
				flat = append(flat, c...)
			}
			if fmt.Sprint(lens) != fmt.Sprint(tc.want) {
				t.Fatalf("chunk lengths %v, want %v", lens, tc.want)
			}
			// Order and content are kept: the chunks concatenate to the input.
			if len(flat) != len(tc.msgs) {
				t.Fatalf("%d messages out, %d in", len(flat), len(tc.msgs))
			}
			for i := range flat {
				if flat[i].Topic != tc.msgs[i].Topic || len(flat[i].Value) != len(tc.msgs[i].Value) {
					t.Fatalf("message %d changed or moved", i)
				}
			}
			// No chunk exceeds a bound for any topic unless one message alone does.
			for ci, c := range got {
				n, b := map[string]int{}, map[string]int64{}
				for _, m := range c {
					n[m.Topic]++
					b[m.Topic] += int64(len(m.Key) + len(m.Value) + recordOverhead)
				}
				for topic := range n {
					if tc.maxMsgs > 0 && n[topic] > tc.maxMsgs {
						t.Errorf("chunk %d: %d messages on %s, bound %d", ci, n[topic], topic, tc.maxMsgs)
					}
					if tc.maxBytes > 0 && b[topic] > tc.maxBytes && n[topic] > 1 {
						t.Errorf("chunk %d: %d bytes on %s, bound %d", ci, b[topic], topic, tc.maxBytes)
					}
				}
			}
		})
	}
}
