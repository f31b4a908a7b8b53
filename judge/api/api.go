// Package api holds the judge's OpenAPI description, committed as openapi.json and
// served at GET /openapi.json.
package api

import _ "embed"

// OpenAPI is the OpenAPI 3 document of the judge's HTTP API.
//
//go:embed openapi.json
var OpenAPI []byte
