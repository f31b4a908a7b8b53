package wavetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/binlake/binlake/internal/testenv"
)

// FailoverLimit bounds a failover at a 4 s session timeout, from the kill of the leading
// wave to the standby's first commit: the dead session expires after 4 s, then the standby
// is elected and opens its pipeline (source connection, topics, publisher), which takes
// 1-2 s on the loaded 2-core test machine (5.5 s in all measured there). Waiting for a
// second session timeout, or for a slow poll of the instance list, would exceed it.
const FailoverLimit = 10 * time.Second

// WaveConfig renders a wave.yaml for node.
func WaveConfig(node, zkServers, root, brokers string, session time.Duration) string {
	return fmt.Sprintf(`node: %s
http: {listen: 127.0.0.1:0}
log: {level: info, format: text}
coordinator:
  kind: zk
  servers: [%s]
  root: %s
  session_timeout: %s
sink:
  kind: kafka
  kafka:
    brokers: [%s]
    partitions: 3
    replication: 1
    max_message_bytes: 1048576
    batch_size: 1000
pipeline:
  commit_interval: 200ms
  poll_interval: 200ms
  publish_max_backoff: 5s
`, node, zkServers, root, session, brokers)
}

// StartWave starts `binlake wave` with cfg as node; testenv.StartBinlake prints the tail
// of its log when the test fails and stops it when the test ends if it still runs. The
// test binary's TestMain must be testenv.RunRemovingBinlake.
func StartWave(t *testing.T, node, cfg string, env []string) *testenv.Proc {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "wave.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return testenv.StartBinlake(t, node, env, "wave", "-config", cfgPath)
}

// HTTPGet returns the body of a GET of url, failing the test on an error or a status
// other than 200.
func HTTPGet(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

// PartitionReader reads one partition of topic from its start.
func PartitionReader(brokers, topic string, partition int) *kafkago.Reader {
	return kafkago.NewReader(kafkago.ReaderConfig{Brokers: strings.Split(brokers, ","), Topic: topic,
		Partition: partition, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 200 * time.Millisecond})
}

// PKID is the "id" of a row message's primary key (its "pk" object) as text, "" when the
// message has no key object.
func PKID(pk json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(pk))
	d.UseNumber() // 64-bit ids stay exact
	var m map[string]any
	if len(pk) == 0 || d.Decode(&m) != nil || m == nil {
		return ""
	}
	return fmt.Sprint(m["id"])
}
