package judge

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/store"
)

// GET /readyz on the real engine: ready while it takes the judge's writes, 503
// store_failing from the first write that fails once the engine is unreachable (while
// /healthz stays 200), and ready again once a write succeeds after it is back.
func TestReadyzElasticIntegration(t *testing.T) {
	t.Parallel() // waits on services; the package runs its long tests side by side
	st, proxy := proxiedElasticStore(t, "readyz")
	base, _ := readyJudge(t, Options{Store: st, Algorithm: "leastload",
		Buffer: store.BufferOptions{MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, CloseTimeout: 5 * time.Second}})
	client := &http.Client{Timeout: 10 * time.Second}
	postBatch := func() int {
		resp, err := client.Post(base+"/v1/metrics", "application/json", bytes.NewReader(encode(t, load("wave-1", time.Now().UTC().Truncate(time.Millisecond), 10, 10))))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	readyz := func() (int, string) {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// The engine's first write creates the index: on a cold engine under a loaded
	// machine (a clean-clone CI run) that alone took over the judge's 4 s, and the batch
	// was refused for now, as it should be. Once the index is there, a batch is stored.
	require.Eventually(t, func() bool { return postBatch() == http.StatusAccepted }, time.Minute, 100*time.Millisecond, "stored in the engine")
	code, body := readyz()
	require.Equal(t, http.StatusOK, code, body)

	proxy.Down()
	require.Equal(t, http.StatusServiceUnavailable, postBatch(), "not stored within 4 s")
	code, body = readyz()
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, `"reason":"store_failing"`)
	code, body = get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code, "liveness: %s", body)

	require.NoError(t, proxy.Up())
	require.Eventually(t, func() bool { code, _ := readyz(); return code == http.StatusOK }, time.Minute, 50*time.Millisecond,
		"ready once the buffer's retry reaches the engine")
}
