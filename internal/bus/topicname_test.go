package bus

import (
	"strings"
	"testing"
)

func TestCheckTopicName(t *testing.T) {
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
			if err := CheckTopicName(tc.name); (err == nil) != tc.ok {
				t.Fatalf("CheckTopicName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}

func FuzzCheckTopicName(f *testing.F) {
	for _, s := range []string{"binlake.metrics", "", "..", "a/b", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := CheckTopicName(name)
		if err != nil {
			return
		}
		// Anything accepted is a legal Kafka name.
		if len(name) == 0 || len(name) > MaxTopicName || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			t.Fatalf("TopicName accepted %q", name)
		}
	})
}
