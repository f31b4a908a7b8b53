package notify

import (
	"context"
	"log/slog"
	"slices"
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
			"severity", a.Labels["severity"], "node", a.Labels["node"], pointLabels(a.Labels), "value", a.Value,
			"summary", a.Annotations["summary"], "starts_at", a.StartsAt, "fingerprint", a.Fingerprint)
	}
	return nil
}

// pointLabels is the group of an alert's labels other than those logged apart (the
// point's mount, cpu, instance…), sorted: two alerts of one policy on one node differ by
// them alone, and the log showed only their values and fingerprints (an outside trial).
// An alert with none adds nothing to the line.
func pointLabels(labels map[string]string) slog.Attr {
	var attrs []any
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range labels {
			if k != "alertname" && k != "severity" && k != "node" && !yield(k) {
				return
			}
		}
	}) {
		attrs = append(attrs, slog.String(k, labels[k]))
	}
	return slog.Group("labels", attrs...)
}
