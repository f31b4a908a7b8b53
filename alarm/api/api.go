// Package api holds the alarm's HTTP API description, committed as openapi.json and
// served at GET /openapi.json, and the alert as the API shows it: the judge's status page
// reads firing alerts in this shape, from the alarm's API or, in `binlake up`, from the
// alarm in the same process.
package api

import (
	_ "embed"
	"time"
)

// OpenAPI is the OpenAPI 3 document of the alarm's HTTP API.
//
//go:embed openapi.json
var OpenAPI []byte

// Alert is an alert as GET /v1/alerts shows it.
type Alert struct {
	Fingerprint   string            `json:"fingerprint"`
	State         string            `json:"state"`
	Labels        map[string]string `json:"labels"`
	Annotations   map[string]string `json:"annotations"`
	Value         float64           `json:"value"`
	ActiveSince   *time.Time        `json:"activeSince,omitempty"`
	FiringSince   *time.Time        `json:"firingSince,omitempty"`
	ResolvedAt    *time.Time        `json:"resolvedAt,omitempty"`
	LastNotified  *time.Time        `json:"lastNotified,omitempty"`
	Notifications int               `json:"notifications"`
	SilencedBy    []string          `json:"silencedBy"`
	Inhibited     bool              `json:"inhibited"`
}

// Alert states.
const (
	StatePending  = "pending"
	StateFiring   = "firing"
	StateResolved = "resolved"
)

// The labels every alert carries.
const (
	LabelAlertName = "alertname"
	LabelSeverity  = "severity"
	LabelNode      = "node"
)
