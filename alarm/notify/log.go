package notify

import (
	"context"
	"log/slog"
)

// Log writes messages to the process log: the channel that cannot fail, for trying the
// alarm out and as a record beside the real channels.
type Log struct {
	L *slog.Logger
}

var _ Notifier = Log{}

// Notify implements Notifier. A firing alert is a warning; its resolution is news, not
// a warning, so it goes at info: a flapping policy's log stays readable at warn, and an
// operator filtering for warnings sees what is wrong now.
func (l Log) Notify(ctx context.Context, m Message) error {
	for _, a := range m.Alerts {
		level := slog.LevelWarn
		if a.Status == StatusResolved {
			level = slog.LevelInfo
		}
		l.L.Log(ctx, level, "alert", "channel", m.Receiver, "status", a.Status, "alertname", a.Labels["alertname"],
			"severity", a.Labels["severity"], "node", a.Labels["node"], "value", a.Value,
			"summary", a.Annotations["summary"], "starts_at", a.StartsAt, "fingerprint", a.Fingerprint)
	}
	return nil
}
