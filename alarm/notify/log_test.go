package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// A firing alert is logged as a warning, its resolution as info, each with what names it.
func TestLogChannelLevels(t *testing.T) {
	var buf bytes.Buffer
	l := Log{L: slog.New(slog.NewJSONHandler(&buf, nil))}
	require.NoError(t, l.Notify(context.Background(), Message{Receiver: "ops", Alerts: []Alert{
		{Status: StatusFiring, Labels: map[string]string{"alertname": "cpu", "node": "w1", "severity": "P2"}, Value: 97},
		{Status: StatusResolved, Labels: map[string]string{"alertname": "cpu", "node": "w2", "mount": "/var/lib/mysql", "cpu": "1"}, Value: 10},
	}}))
	dec := json.NewDecoder(&buf)
	var got []map[string]any
	for dec.More() {
		var rec map[string]any
		require.NoError(t, dec.Decode(&rec))
		got = append(got, rec)
	}
	require.Len(t, got, 2)
	for i, want := range []struct{ level, status, node string }{{"WARN", "firing", "w1"}, {"INFO", "resolved", "w2"}} {
		require.Equal(t, want.level, got[i]["level"], got[i])
		require.Equal(t, want.status, got[i]["status"])
		require.Equal(t, want.node, got[i]["node"])
		require.Equal(t, "ops", got[i]["channel"])
		require.Equal(t, "cpu", got[i]["alertname"])
	}
	// The point's labels tell two alerts of a policy on a node apart (they showed only
	// their values and fingerprints); an alert with none logs no group.
	require.NotContains(t, got[0], "labels")
	require.Equal(t, map[string]any{"cpu": "1", "mount": "/var/lib/mysql"}, got[1]["labels"])
}
