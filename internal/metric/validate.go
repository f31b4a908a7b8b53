package metric

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
	"unicode/utf8"
)

// Bounds on a batch. A bad message must cost little: the size is checked before parsing,
// and every other bound keeps one batch from flooding the stores behind the consumers.
const (
	MaxBatchBytes    = 1 << 20 // encoded size
	MaxPoints        = 10_000
	MaxLabels        = 32 // per point
	MaxNameLen       = 128
	MaxNodeLen       = 255
	MaxLabelKeyLen   = 128
	MaxLabelValueLen = 1024
	MaxIntervalS     = 86_400 // one day; anything longer is a unit mistake
)

// Sentinel errors; every error from Decode, Encode and Validate wraps one of them.
var (
	ErrInvalid  = errors.New("invalid metric batch")
	ErrTooLarge = errors.New("metric batch too large")
)

// Oldest and newest timestamps accepted. The lower bound catches a zero or Unix-epoch
// timestamp from an uninitialised clock; the upper one is where RFC 3339 ends.
var (
	minTS = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTS = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
)

// ValidName reports whether s is a valid metric name: 1 to MaxNameLen characters of
// lowercase letters, digits, '.' and '_', starting with a letter, with no empty
// dot-separated segment ("cpu..util", "cpu.").
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// ValidLabelKey reports whether s is a valid label key. Keys follow Prometheus label
// names ([A-Za-z_][A-Za-z0-9_]*, at most MaxLabelKeyLen bytes), which also keeps dots out
// of Elasticsearch field names, where they would create nested objects.
func ValidLabelKey(s string) bool {
	if len(s) == 0 || len(s) > MaxLabelKeyLen || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// text checks free text (node id, label values): valid UTF-8 without control characters,
// so it round-trips through JSON and cannot forge log lines.
func text(s string) error { return CheckText(s) }

// CheckText is the rule of free text and ids in BinLake's APIs: valid UTF-8 without
// control characters (below U+0020, and U+007F), so that it round-trips through JSON and
// cannot forge log lines. A batch's node and label values keep to it, and so do the
// judge's instance and node ids (placement, rebalance).
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("invalid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("control character %U", r)
		}
	}
	return nil
}

// MaxAhead is how far past a reader's clock a batch may be dated: agents' clocks drift by
// seconds, a host without NTP by minutes. The judge refuses a batch dated further ahead
// (it made its node look idle), and the alarm skips one (its series then took every
// later batch for a redelivery until the clock passed it, blind to its node's values).
const MaxAhead = 10 * time.Minute

// Validate checks every rule of the data contract. Encode and Decode both call it, so
// anything one accepts the other does.
func (b Batch) Validate() error { return b.validate(true) }

// validate is Validate; checkLabels false skips the label sets, for a decoder that has
// checked every one of them (decoder.labelsUnchecked).
func (b Batch) validate(checkLabels bool) error {
	switch {
	case b.Node == "":
		return fmt.Errorf("%w: empty node", ErrInvalid)
	case len(b.Node) > MaxNodeLen:
		return fmt.Errorf("%w: node longer than %d bytes", ErrInvalid, MaxNodeLen)
	}
	if err := text(b.Node); err != nil {
		return fmt.Errorf("%w: node: %v", ErrInvalid, err)
	}
	switch {
	case b.TS.IsZero():
		return fmt.Errorf("%w: missing or zero ts", ErrInvalid)
	case b.TS.Before(minTS) || b.TS.After(maxTS):
		return fmt.Errorf("%w: ts %s out of range [%d, %d]", ErrInvalid, b.TS.UTC().Format(time.RFC3339), minTS.Year(), maxTS.Year())
	}
	switch iv := b.IntervalS; {
	case math.IsNaN(iv) || math.IsInf(iv, 0):
		return fmt.Errorf("%w: interval_s is not a finite number", ErrInvalid)
	case iv <= 0:
		return fmt.Errorf("%w: interval_s %v must be positive", ErrInvalid, iv)
	case iv > MaxIntervalS:
		return fmt.Errorf("%w: interval_s %v exceeds %d", ErrInvalid, iv, MaxIntervalS)
	}
	if len(b.Points) > MaxPoints {
		return fmt.Errorf("%w: %d points, more than %d", ErrTooLarge, len(b.Points), MaxPoints)
	}
	for i := range b.Points {
		if err := b.Points[i].validate(checkLabels); err != nil {
			return fmt.Errorf("%w: point %d: %s", ErrInvalid, i, err)
		}
	}
	return nil
}

func (p *Point) validate(checkLabels bool) error {
	switch {
	case p.Name == "":
		return errors.New("empty name")
	case !ValidName(p.Name):
		return fmt.Errorf("invalid name %q (want lowercase letters, digits, '.' and '_', starting with a letter, at most %d bytes)", truncate(p.Name), MaxNameLen)
	case math.IsNaN(p.Value):
		return fmt.Errorf("%s: value is NaN", p.Name)
	case math.IsInf(p.Value, 0):
		return fmt.Errorf("%s: value is infinite", p.Name)
	}
	if !checkLabels {
		return nil
	}
	return p.validateLabels()
}

// validateLabels checks the point's label set. When several labels break the rules it
// names the first in key order, so that a batch always gets the same error.
func (p *Point) validateLabels() error {
	if len(p.Labels) > MaxLabels {
		return fmt.Errorf("%s: %d labels, more than %d", p.Name, len(p.Labels), MaxLabels)
	}
	for k, v := range p.Labels {
		if labelError(p.Name, k, v) != nil {
			keys := slices.Sorted(maps.Keys(p.Labels))
			for _, k := range keys {
				if err := labelError(p.Name, k, p.Labels[k]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// labelError is what is wrong with one label of the point named name, or nil.
func labelError(name, k, v string) error {
	switch {
	case k == "":
		return fmt.Errorf("%s: empty label key", name)
	case !ValidLabelKey(k):
		return fmt.Errorf("%s: invalid label key %q (want [A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", name, truncate(k), MaxLabelKeyLen)
	case len(v) > MaxLabelValueLen:
		return fmt.Errorf("%s: label %q: value longer than %d bytes", name, k, MaxLabelValueLen)
	}
	if err := text(v); err != nil {
		return fmt.Errorf("%s: label %q: %v", name, k, err)
	}
	return nil
}

// truncate keeps error messages short when the offending input is huge.
func truncate(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:61] + "..."
}
