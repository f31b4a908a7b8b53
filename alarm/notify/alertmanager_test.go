package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// amServer is an httptest Alertmanager API that records POST /api/v2/alerts.
type amServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]postableAlert
	auth   []string
	status int
}

func newAMServer(t *testing.T, status int) *amServer {
	s := &amServer{status: status}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v2/alerts" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want POST /api/v2/alerts with JSON", http.StatusBadRequest)
			return
		}
		var b []postableAlert
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.WriteHeader(s.status)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestAlertmanagerPosts(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	a1, a2 := newAMServer(t, http.StatusOK), newAMServer(t, http.StatusOK)
	am, err := NewAlertmanager(AlertmanagerOptions{URLs: []string{a1.URL, a2.URL + "/"}, Resend: 30 * time.Second,
		Username: "binlake", Password: "pw", Now: func() time.Time { return now }})
	require.NoError(t, err)
	started := now.Add(-time.Hour)
	m := Message{ExternalURL: "http://alarm:8092", Alerts: []Alert{
		{Status: StatusFiring, Labels: map[string]string{"alertname": "cpu", "node": "w1"}, Annotations: map[string]string{"summary": "hot"}, StartsAt: started, Fingerprint: "f1"},
		{Status: StatusResolved, Labels: map[string]string{"alertname": "cpu", "node": "w2"}, StartsAt: started, EndsAt: now.Add(-time.Minute), Fingerprint: "f2"},
	}}
	require.NoError(t, am.Notify(context.Background(), m))
	for _, s := range []*amServer{a1, a2} {
		require.Len(t, s.bodies, 1, "every URL gets every alert")
		got := s.bodies[0]
		require.Equal(t, postableAlert{Labels: map[string]string{"alertname": "cpu", "node": "w1"}, Annotations: map[string]string{"summary": "hot"},
			StartsAt: started, EndsAt: now.Add(2 * time.Minute), GeneratorURL: "http://alarm:8092/v1/alerts?fingerprint=f1"}, got[0],
			"a firing alert ends four resend intervals ahead")
		require.Equal(t, now.Add(-time.Minute), got[1].EndsAt, "a resolved alert ends at its resolution")
		require.Equal(t, "Basic YmlubGFrZTpwdw==", s.auth[0])
	}

	// Refresh sends the firing alerts again with a new horizon; nothing when there are none.
	now = now.Add(30 * time.Second)
	require.NoError(t, am.Refresh(context.Background(), m.Alerts[:1], ""))
	require.NoError(t, am.Refresh(context.Background(), nil, ""))
	require.Len(t, a1.bodies, 2)
	require.Equal(t, now.Add(2*time.Minute), a1.bodies[1][0].EndsAt)
	require.Empty(t, a1.bodies[1][0].GeneratorURL)
}

// One Alertmanager down: the others still get the alert, and the error names the one
// that failed (the dispatcher tries again); a 400 is permanent.
func TestAlertmanagerErrors(t *testing.T) {
	ok, bad := newAMServer(t, http.StatusOK), newAMServer(t, http.StatusServiceUnavailable)
	am, err := NewAlertmanager(AlertmanagerOptions{URLs: []string{ok.URL, bad.URL}, BearerToken: "tok"})
	require.NoError(t, err)
	m := Message{Alerts: []Alert{{Status: StatusFiring, Labels: map[string]string{"alertname": "x"}}}}
	err = am.Notify(context.Background(), m)
	require.ErrorContains(t, err, "HTTP 503")
	require.ErrorContains(t, err, bad.Listener.Addr().String())
	require.NotErrorIs(t, err, ErrPermanent)
	require.Len(t, ok.bodies, 1)
	require.Equal(t, "Bearer tok", ok.auth[0])

	refused := newAMServer(t, http.StatusBadRequest)
	am, err = NewAlertmanager(AlertmanagerOptions{URLs: []string{refused.URL}})
	require.NoError(t, err)
	require.ErrorIs(t, am.Notify(context.Background(), m), ErrPermanent)

	for _, o := range []AlertmanagerOptions{
		{},
		{URLs: []string{"am:9093"}},
		{URLs: []string{"http://user:pw@am:9093"}},
		{URLs: []string{"http://am:9093"}, Username: "u", BearerToken: "t"},
	} {
		_, err := NewAlertmanager(o)
		require.Error(t, err, "%+v", o)
	}
}
