package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Record is one of the judge's own small records, kept in the store beside the points
// so that it outlives the judge's process: a placement's reservation, the interval a
// node declared. Kind and Key identify it; the store does not read Value.
type Record struct {
	Kind  string
	Key   string
	Value []byte // empty deletes the record (WriteRecords)
}

// MaxRecordID bounds a record's Kind and Key together, in bytes: the Elasticsearch store
// makes them a document's _id, which the engine caps at 512 bytes.
const MaxRecordID = 500

// Validate reports, wrapping ErrInvalid, a record no store can keep: an empty kind or
// key, a kind with a '/' (the Elasticsearch store's _id is kind/key: "a/b"/"c" and
// "a"/"b/c" would be one document), either not UTF-8, or both longer than MaxRecordID.
func (r Record) Validate() error {
	switch {
	case r.Kind == "" || r.Key == "":
		return fmt.Errorf("%w: record %q/%q: empty kind or key", ErrInvalid, r.Kind, r.Key)
	case strings.Contains(r.Kind, "/"):
		return fmt.Errorf("%w: record kind %q: contains '/'", ErrInvalid, r.Kind)
	case !utf8.ValidString(r.Kind) || !utf8.ValidString(r.Key):
		return fmt.Errorf("%w: record %q/%q: kind or key is not UTF-8", ErrInvalid, r.Kind, r.Key)
	case len(r.Kind)+len(r.Key) > MaxRecordID:
		return fmt.Errorf("%w: record %.20q/%.20q…: kind and key are %d bytes, at most %d", ErrInvalid, r.Kind, r.Key, len(r.Kind)+len(r.Key), MaxRecordID)
	}
	return nil
}

// ValidateRecords validates every record (Record.Validate), so that a store writes all
// of them or none.
func ValidateRecords(recs []Record) error {
	for _, r := range recs {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return nil
}
