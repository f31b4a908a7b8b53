package api

import (
	"time"

	"github.com/binlake/binlake/lbplugins"
)

// The judge's request and answer types, shared by the judge (which answers) and its
// client (judge/client); openapi.json describes the same shapes.

// PlacementRequest is the body of POST /v1/placement.
type PlacementRequest struct {
	Instance  string   `json:"instance"`
	Exclude   []string `json:"exclude,omitempty"`
	Algorithm string   `json:"algorithm,omitempty"`
	// Top is how many of the best candidates the answer explains (lbplugins.DefaultTopK
	// when zero); Explain "all" explains every candidate and lists every filtered node.
	Top     int    `json:"top,omitempty"`
	Explain string `json:"explain,omitempty"`
	// DryRun answers without reserving capacity on the chosen node.
	DryRun bool `json:"dry_run,omitempty"`
}

// Explain values.
const (
	ExplainTop = "top"
	ExplainAll = "all"
)

// Reservation is capacity a placement holds on its node until the node's reported
// wave.instances shows the instance (reaches Target) or the reservation expires.
type Reservation struct {
	Instance  string    `json:"instance"`
	Node      string    `json:"node"`
	At        time.Time `json:"at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Target is the wave.instances the node reports once it runs the instance: what it
	// reported at placement plus its reservations then, this one included. Zero when the
	// node reports no instance count (only expiry ends the reservation).
	Target float64 `json:"target_instances,omitempty"`
}

// PlacementAnswer is the answer to POST /v1/placement as a client decodes it: the node,
// how the decision was made, and the reservation it holds (none for a dry run).
type PlacementAnswer struct {
	Node          string                 `json:"node"`
	Algorithm     string                 `json:"algorithm"`
	DataAsOf      time.Time              `json:"data_as_of"`
	Candidates    int                    `json:"candidates"`
	Scores        []Score                `json:"scores"`
	Filtered      lbplugins.FilterCounts `json:"filtered"`
	FilteredNodes []lbplugins.Filtered   `json:"filtered_nodes,omitempty"`
	Reservation   *Reservation           `json:"reservation,omitempty"`
}

// Score is one candidate's score in a placement answer: its parts by name (the
// algorithm's weighted resources, or its raw inputs) and the placements still pending
// on it.
type Score struct {
	Node    string             `json:"node"`
	Score   float64            `json:"score"`
	Parts   map[string]float64 `json:"parts"`
	Pending float64            `json:"pending,omitempty"`
}
