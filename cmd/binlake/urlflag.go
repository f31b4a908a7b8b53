//go:build !agentonly

package main

import (
	"fmt"
	"net/url"

	"github.com/binlake/binlake/internal/config"
)

// checkBaseURLFlag refuses a base URL flag (-judge) holding a user, a password or a
// credential in its query, as the configs' URLs are refused (config.URLHasCredentials):
// the URL is printed in warnings, in what a command says it used and in logs; instead
// says where the credential goes. A query or a fragment is refused too: the API's
// paths are appended to the URL (config.BaseURLProblem).
func checkBaseURLFlag(flag, value, instead string) error {
	switch {
	case value == "":
		return nil
	case config.URLHasCredentials(value):
		return fmt.Errorf("%s: %s: %s", flag, config.URLCredentialsRefused, instead)
	case config.BaseURLProblem(value) != "":
		return fmt.Errorf("%s %s: %s", flag, value, config.BaseURLProblem(value))
	}
	// As the configs' URLs are checked: "notaurl" was taken, and bench fleet retried it
	// for two minutes before it said anything (an outside trial).
	if u, err := url.Parse(value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %s: want an http:// or https:// URL with a host", flag, value)
	}
	return nil
}
