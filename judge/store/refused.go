package store

import (
	"fmt"
	"strings"
)

// RefusedError is what a Write returns when the engine refused some of its points for
// good, for a reason a retry will not change (an Elasticsearch mapping conflict: a
// metric name that is a dot-prefix of another), and stored every other point: the
// write is finished, and sending it again would store nothing more. It wraps
// ErrInvalid. Store is the engine's name ("elastic store"); Reasons are the engine's
// first few reasons, for the log.
type RefusedError struct {
	Store   string
	Points  int // points refused: those the engine named, or every point of a document it refused whole
	Total   int // points in the write
	Reasons []string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: %d of %d points refused for good, the others stored: %s: %v",
		e.Store, e.Points, e.Total, strings.Join(e.Reasons, "; "), ErrInvalid)
}

func (e *RefusedError) Unwrap() error { return ErrInvalid }
