//go:build !agentonly

package main

import (
	"fmt"

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
	return nil
}
