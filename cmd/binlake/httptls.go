package main

import "github.com/binlake/binlake/internal/config"

// scheme is the URL scheme a role's API serves with its http.tls section.
func scheme(t config.HTTPTLS) string {
	if t.Enabled() {
		return "https"
	}
	return "http"
}
