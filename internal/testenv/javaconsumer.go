package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// javaConsumers caches JavaConsumer's classpaths for the test process.
var javaConsumers sync.Map // dir → classpath

// JavaConsumer builds the Maven project in dir (relative to the repository root, such as
// "deploy/testenv/canal-consumer") with deploy/testenv/javaconsumer.sh, which fetches its
// jars from Maven Central once into the test environment's cache, and returns the
// classpath to run its classes with (java -cp). A build that fails fails the test: a test
// that calls this runs a real consumer, and Java and Maven are part of the test services.
func JavaConsumer(t testing.TB, dir string) string {
	t.Helper()
	if cp, ok := javaConsumers.Load(dir); ok {
		return cp.(string)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "deploy", "testenv", "javaconsumer.sh"), filepath.Join(root, dir))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build the Java consumer %s: %v\n%s", dir, err, stderr.String())
	}
	cp := strings.TrimSpace(stdout.String())
	javaConsumers.Store(dir, cp)
	return cp
}

// RequireJava is for a test that needs only Java and Maven (JavaConsumer), not a service:
// `make services-up` installs them (for Kafka), so the test runs under CI=true or where the
// services' variables are set (`make test`), and is skipped otherwise, as a test of a
// service would be.
func RequireJava(t testing.TB) {
	t.Helper()
	if InCI() || os.Getenv(Kafka.Env) != "" {
		return
	}
	t.Skipf("integration test: needs Java and Maven; runs under CI=true or with the test services' variables set (`make services-up` and `eval $(deploy/testenv/services.sh env)`)")
}
