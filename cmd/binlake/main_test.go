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
