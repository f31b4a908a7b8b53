package check

import (
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/bus"
)

func TestTopicName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"binlake.metrics", true},
		{"orders_v2-shop.Orders", true},
		{strings.Repeat("a", MaxTopicName), true},
		{strings.Repeat("a", MaxTopicName+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"commit=0s", false},
		{"tópico", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := TopicName(tc.name); (err == nil) != tc.ok {
				t.Fatalf("TopicName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}

func TestTopicSpecDefaults(t *testing.T) {
	got, err := TopicSpec(bus.TopicSpec{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Partitions != 1 || got.Replication != 1 || got.MaxMessageBytes != 0 {
		t.Fatalf("defaults = %+v, want 1 partition, replication 1, no size limit", got)
	}
}

func FuzzTopicName(f *testing.F) {
	for _, s := range []string{"binlake.metrics", "", "..", "a/b", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := TopicName(name)
		if err != nil {
			return
		}
		// Anything accepted is a legal Kafka name.
		if len(name) == 0 || len(name) > MaxTopicName || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			t.Fatalf("TopicName accepted %q", name)
		}
	})
}
