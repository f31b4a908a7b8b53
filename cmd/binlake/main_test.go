package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantErr    error
		wantErrSub string
		wantOut    string
	}{
		{name: "no args prints usage", args: nil, wantErr: errUsage, wantOut: "Commands:"},
		{name: "unknown command", args: []string{"frobnicate"}, wantErr: errUsage, wantOut: `unknown command "frobnicate"`},
		{name: "version", args: []string{"version"}, wantOut: "binlake "},
		{name: "help", args: []string{"help"}, wantOut: "up "},
		{name: "bad flag", args: []string{"up", "-nope"}, wantErrSub: "flag provided but not defined"},
		{name: "bad log level", args: []string{"up", "-log-level", "loud"}, wantErrSub: `bad -log-level "loud"`},
		{name: "unknown benchmark", args: []string{"bench", "kafka"}, wantErr: errUsage, wantOut: `unknown benchmark "kafka"`},
		{name: "bench lists judge", args: []string{"bench", "-h"}, wantOut: "judge  start a real judge process"},
		{name: "bench judge help", args: []string{"bench", "judge", "-h"}, wantOut: "-ingest-rate"},
		{name: "bench judge bad mode", args: []string{"bench", "judge", "-mode", "both"}, wantErrSub: `-mode "both": want placement or ingest`},
		{name: "bench judge zero nodes", args: []string{"bench", "judge", "-nodes", "0"}, wantErrSub: "-nodes 0: must be at least 1"},
		{name: "bench judge bad number", args: []string{"bench", "judge", "-points", "lots"}, wantErrSub: `invalid value "lots" for flag -points`},
		{name: "bench judge bad store", args: []string{"bench", "judge", "-store", "csv"}, wantErrSub: `-store "csv": want sqlite or elastic`},
		{name: "alarm help names alarm test", args: []string{"alarm", "-h"}, wantOut: "binlake alarm test -policies FILE [flags]  (try policies on stored or recorded history"},
		{name: "alarm test help", args: []string{"alarm", "test", "-h"}, wantOut: "prints when each alert would have fired\nand resolved"},
		{name: "bench judge argument", args: []string{"bench", "judge", "now"}, wantErr: errUsage, wantOut: `unexpected argument "now"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, &out, &out)
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			case tc.wantErrSub != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErrSub)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErrSub)
			case tc.wantErr == nil && tc.wantErrSub == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("output %q does not contain %q", out.String(), tc.wantOut)
			}
		})
	}
}
