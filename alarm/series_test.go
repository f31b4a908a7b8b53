package alarm

import "testing"

// TestFingerprintStable pins an alert's fingerprint: it outlives the process (the
// notification log, the receivers' deduplication), so a change to how it is computed
// must show here rather than re-notify every alert after an upgrade.
func TestFingerprintStable(t *testing.T) {
	labels := map[string]string{"alertname": "cpu_high", "node": "wave-1", "severity": "page"}
	if got := fingerprint(labels); got != 0x60bc5ff2ef22e3f5 {
		t.Fatalf("fingerprint %016x, want 60bc5ff2ef22e3f5", got)
	}
}
