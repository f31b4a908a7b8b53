package check

import (
	"testing"

	"github.com/binlake/binlake/internal/bus"
)

func TestTopicSpecDefaults(t *testing.T) {
	got, err := TopicSpec(bus.TopicSpec{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Partitions != 1 || got.Replication != 1 || got.MaxMessageBytes != 0 {
		t.Fatalf("defaults = %+v, want 1 partition, replication 1, no size limit", got)
	}
}
