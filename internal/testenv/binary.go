package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// BinlakeEnv names a prebuilt binlake binary for the tests that run one, instead of
// building cmd/binlake (handy when iterating on such a test).
const BinlakeEnv = "BINLAKE_TEST_BIN"

var (
	binMu  sync.Mutex
	binDir string // the folder of the built binary; "" until built
	binErr error
)

// BinlakeBinary returns the path of a binlake binary built from this tree, building it
// on the first call of the test process (or $BINLAKE_TEST_BIN when set). A package whose
// tests call it has RunRemovingBinlake as its TestMain, which removes the build.
func BinlakeBinary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv(BinlakeEnv); b != "" {
		return b
	}
	binMu.Lock()
	defer binMu.Unlock()
	if binDir == "" && binErr == nil {
		binDir, binErr = buildBinlake()
	}
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "binlake")
}

func buildBinlake() (string, error) {
	dir, err := os.MkdirTemp("", "binlake-test-bin-")
	if err != nil {
		return "", err
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	out, err := exec.Command(gobin, "build", "-o", filepath.Join(dir, "binlake"), "github.com/binlake/binlake/cmd/binlake").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/binlake: %v\n%s", err, out)
	}
	return dir, nil
}

// RunRemovingBinlake is the TestMain of a package whose tests call BinlakeBinary: it runs
// the tests, deletes the binary BinlakeBinary built, if any, and exits with their status.
func RunRemovingBinlake(m *testing.M) {
	code := m.Run()
	removeBinlakeBinary()
	os.Exit(code)
}

func removeBinlakeBinary() {
	binMu.Lock()
	defer binMu.Unlock()
	if binDir != "" {
		os.RemoveAll(binDir)
		binDir = ""
	}
}
