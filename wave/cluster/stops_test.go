package cluster

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/binlake/binlake/internal/coord/single"
)

// TestStopRecord: a wave's clean stop is recorded until it registers again; a node that
// never stopped has none, and clearing what is not there is no error.
func TestStopRecord(t *testing.T) {
	ctx := context.Background()
	c, err := single.New(single.Options{Path: filepath.Join(t.TempDir(), "coord.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, err := StoppedCleanly(ctx, c, "wave-a"); err != nil || ok {
		t.Fatalf("StoppedCleanly before any stop = %v, %v; want false, nil", ok, err)
	}
	if err := RecordStop(ctx, c, "wave-a", "v1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := StoppedCleanly(ctx, c, "wave-a"); err != nil || !ok {
		t.Fatalf("StoppedCleanly after RecordStop = %v, %v; want true, nil", ok, err)
	}
	if ok, _ := StoppedCleanly(ctx, c, "wave-b"); ok {
		t.Error("wave-b counted as stopped by wave-a's record")
	}
	for range 2 { // the second finds nothing to clear
		if err := ClearStop(ctx, c, "wave-a"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := StoppedCleanly(ctx, c, "wave-a"); err != nil || ok {
		t.Fatalf("StoppedCleanly after ClearStop = %v, %v; want false, nil", ok, err)
	}
}
