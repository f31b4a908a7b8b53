//go:build !agentonly

package main

import (
	"strings"
	"testing"
)

// TestCheckBaseURLFlag: a -judge URL is refused as the configs' are: credentials, a query,
// and a value that is no http(s) URL with a host ("notaurl" was taken, and bench fleet
// retried it for two minutes before it said anything: an outside trial).
func TestCheckBaseURLFlag(t *testing.T) {
	for value, want := range map[string]string{
		"":                          "",
		"http://judge:8090":         "",
		"https://judge.example/api": "",
		"notaurl":                   "want an http:// or https:// URL with a host",
		"ftp://judge":               "want an http:// or https:// URL with a host",
		"http://":                   "want an http:// or https:// URL with a host",
		"http://judge:8090/?x=1":    "a query or a fragment",
		"http://u:p@judge:8090":     "-judge",
	} {
		err := checkBaseURLFlag("-judge", value, "use -judge-token-file")
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v, want it taken", value, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want an error holding %q", value, err, want)
		}
	}
}
