package alarm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/coord/zk"
	"github.com/binlake/binlake/internal/testenv"
)

// A silence created or deleted through one alarm process applies in another at once, not
// at its next periodic refresh (10 s: a page could go out meanwhile to an operator who had
// just silenced it). Two processes' caches of the silences, the second watching, on each
// coordinator: the single one, and ZooKeeper with a session each.
func TestSilenceAppliesAtOnceInAnotherProcess(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		c := openCoord(t, t.TempDir())
		t.Cleanup(func() { c.Close() })
		silenceSeenElsewhere(t, c, c)
	})
	t.Run("zookeeper", func(t *testing.T) {
		zaddr := testenv.Require(t, testenv.ZooKeeper)
		root := "/silencewatch-" + time.Now().Format("150405.000000000")
		open := func() coord.Coordinator {
			c, err := zk.New(context.Background(), zk.Options{Servers: testenv.HostPorts(zaddr), Root: root})
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			return c
		}
		first := open()
		silenceSeenElsewhere(t, first, open())
		t.Cleanup(func() { first.Delete(context.Background(), DefaultSilenceKey, coord.AnyVersion) })
	})
}

func silenceSeenElsewhere(t *testing.T, here, there coord.Coordinator) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writer := NewSilences(here, "", nil)
	watcher := NewSilences(there, "", nil)
	done := make(chan struct{})
	go func() { watcher.Watch(ctx, time.Hour, quiet); close(done) }()
	labels := map[string]string{"alertname": "cpu", "node": "wave-1"}
	matched := func() bool { return len(watcher.Match(labels, time.Now())) > 0 }

	s, err := writer.Create(ctx, Silence{Matchers: []Matcher{{Name: "node", Value: "wave-1"}}, EndsAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Eventually(t, matched, 3*time.Second, 10*time.Millisecond, "the other process sees the new silence")
	require.NoError(t, writer.Delete(ctx, s.ID))
	require.Eventually(t, func() bool { return !matched() }, 3*time.Second, 10*time.Millisecond, "and its deletion")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return when its context ended")
	}
}
