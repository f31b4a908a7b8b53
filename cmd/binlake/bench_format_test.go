package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/binlake/binlake/wave/rowenc"
)

// TestBenchWaveUnknownFormat: `binlake bench wave -format` refuses a format it does not
// know before it touches a source, naming the ones it knows.
func TestBenchWaveUnknownFormat(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "wave", "-format", "avro", "-mysql", "127.0.0.1:1"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `format "avro": unknown; known formats: `+strings.Join(rowenc.FormatNames(), ", ")) {
		t.Fatalf("err = %v, want the unknown format named with the known ones", err)
	}
	for _, f := range []string{rowenc.FormatProtobuf, rowenc.FormatCanalProtobuf} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("err %v does not name %s", err, f)
		}
	}
}
