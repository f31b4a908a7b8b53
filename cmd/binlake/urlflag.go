//go:build !agentonly

package main

import (
	"fmt"

	"github.com/binlake/binlake/internal/config"
)

// refuseURLCredentials refuses a URL flag (-judge) holding a user or password, as the
// configs' URLs are refused (config.URLHasCredentials): the URL is printed in warnings,
// in what a command says it used and in logs. instead says where the credential goes.
func refuseURLCredentials(flag, value, instead string) error {
	if value == "" || !config.URLHasCredentials(value) {
		return nil
	}
	return fmt.Errorf("%s: %s: %s", flag, config.URLCredentialsRefused, instead)
}
