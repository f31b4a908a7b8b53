package rowpb_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeUpToDate regenerates the Go code of proto/ (proto/gen.sh, what make
// proto runs) into a scratch folder and fails when the committed files differ: a .proto
// edited without `make proto`. It fetches protoc from Maven Central on its first run, so
// it runs where the test services do (CI=true, or BINLAKE_TESTENV_DIR set).
func TestGeneratedCodeUpToDate(t *testing.T) {
	if os.Getenv("CI") != "true" && os.Getenv("BINLAKE_TESTENV_DIR") == "" {
		t.Skip("runs with the test environment (CI=true or BINLAKE_TESTENV_DIR): it fetches protoc with Maven")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "proto", "gen.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("proto/gen.sh: %v\n%s", err, b)
	}
	for _, f := range []string{"wave/rowenc/rowpb/row.pb.go", "wave/rowenc/canalpb/canal.pb.go"} {
		want, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatalf("proto/gen.sh did not write %s: %v", f, err)
		}
		got, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is not what proto/gen.sh generates from proto/: run make proto", f)
		}
	}
}
