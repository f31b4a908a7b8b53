package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

// TestKafkaFormatClusterIDStartingWithDash formats a scratch broker's data folder with
// deploy/testenv/kafka.sh and a cluster id that begins with '-', as one random id in 64
// does. Kafka's argument parser read such an id after -t as an option, so `make
// services-up` failed on such a fresh machine ("argument --cluster-id/-t: expected one
// argument"). The running test broker is not touched: the folder is the test's own, and
// the script only formats it (private-format). It needs what `make services-up` installs
// for that broker (Java, the Kafka jars), so it runs where the broker does.
func TestKafkaFormatClusterIDStartingWithDash(t *testing.T) {
	testenv.Require(t, testenv.Kafka)
	const id = "-bIw3m2XQq6nQ0N0l1k8Mg" // 16 bytes in URL-safe base64, as the script makes them
	dir := filepath.Join(t.TempDir(), "kafka")
	// Ports of the written configuration only: formatting opens none.
	cmd := exec.Command("bash", filepath.Join("testenv", "kafka.sh"), "private-format", dir, "29990", "29991")
	cmd.Env = append(os.Environ(), "BINLAKE_KAFKA_CLUSTER_ID="+id)
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log", "format.log"))
		t.Fatalf("kafka.sh private-format with cluster id %s: %v\n%s\nformat.log:\n%s", id, err, out, log)
	}
	f, err := os.Open(filepath.Join(dir, "data", "meta.properties"))
	if err != nil {
		t.Fatalf("the data folder was not formatted: %v\n%s", err, out)
	}
	defer f.Close()
	var got string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), "cluster.id="); ok {
			got = v
		}
	}
	if got != id {
		t.Fatalf("meta.properties has cluster.id %q, want %q", got, id)
	}
}
