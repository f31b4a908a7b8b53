package alarm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/alarm/notify"
	"github.com/binlake/binlake/internal/testenv"
)

// A stop while one channel retries a page the others delivered hands the page back for
// that channel alone: the next process sends it there, and only there (t4: SIGTERM while
// the webhook receiver was down; the webhook never got the page, then got its resolution).
func TestStopHandsBackAChannelsPage(t *testing.T) {
	mail := newReceiver(t)
	dir := t.TempDir()
	hookAddr := testenv.FreeAddr(t) // nothing listens: the receiver is down
	pol := strings.Replace(basePolicy, "channels: [c]", "channels: [mail, hook]", 1) + "    repeat_interval: 1h\n"
	run := func(hookURL string) (*Alarm, func() error) {
		c := openCoord(t, dir)
		a, stop := runAlarm(t, Options{Policies: parsePolicies(t, pol), Coordinator: c, Logger: quiet,
			Channels: map[string]notify.Notifier{"mail": webhookChannel(t, mail.srv.URL), "hook": webhookChannel(t, hookURL)},
			Dispatch: notify.DispatcherOptions{Attempts: 4, Backoff: time.Second}})
		return a, func() error { err := stop(); c.Close(); return err }
	}
	a, stop := run("http://" + hookAddr)
	require.NoError(t, a.ObserveRaw(encode(t, "wave-1", time.Now(), 10, cpu(95))))
	require.Equal(t, "firing", mail.wait(t, 1)[0].Status)
	start := time.Now()
	require.NoError(t, stop())
	t.Logf("stopped in %s", time.Since(start))

	c := openCoord(t, dir)
	entries, err := (&CoordLog{C: c}).Load(context.Background())
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Len(t, entries, 1)
	require.Equal(t, []string{"hook"}, entries[0].Owed, "%+v", entries[0])
	require.True(t, entries[0].QueuedAt.IsZero(), "handed back: %+v", entries[0])

	hook := newReceiver(t)
	a, stop = run(hook.srv.URL)
	require.NoError(t, a.ObserveRaw(encode(t, "wave-1", time.Now(), 10, cpu(95))))
	p := hook.wait(t, 1)
	require.Equal(t, "firing", p[0].Status)
	require.NoError(t, a.ObserveRaw(encode(t, "wave-1", time.Now().Add(time.Second), 10, cpu(10))))
	require.Equal(t, "resolved", hook.wait(t, 2)[1].Status)
	require.Equal(t, "resolved", mail.wait(t, 2)[1].Status)
	require.Len(t, mail.payloads(), 2, "mail got the page once")
	require.NoError(t, stop())
}
