// Package keypath validates the slash-separated keys and names of package coord, so both
// implementations reject the same bad input with the same clear errors.
package keypath

import (
	"fmt"
	"strings"
)

// maxLen bounds a key: ZooKeeper paths have no hard limit, but a key this long is a bug.
const maxLen = 1024

// Check reports why key is not a valid coordinator key: keys are relative, slash-separated
// and made of non-empty segments other than "." and "..".
func Check(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("invalid key %q: empty", key)
	case len(key) > maxLen:
		return fmt.Errorf("invalid key %.40q…: longer than %d bytes", key, maxLen)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("invalid key %q: must be relative (no leading slash)", key)
	case strings.HasSuffix(key, "/"):
		return fmt.Errorf("invalid key %q: trailing slash", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if err := checkSegment(seg); err != nil {
			return fmt.Errorf("invalid key %q: %w", key, err)
		}
	}
	return nil
}

// CheckName reports why name is not a valid single path segment (a member id).
func CheckName(name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("invalid name %q: must not contain a slash", name)
	}
	if err := checkSegment(name); err != nil {
		return fmt.Errorf("invalid name %q: %w", name, err)
	}
	return nil
}

func checkSegment(seg string) error {
	switch seg {
	case "":
		return fmt.Errorf("empty segment")
	case ".", "..":
		return fmt.Errorf("segment %q is not allowed", seg)
	}
	for _, r := range seg {
		// ZooKeeper rejects control characters and a few Unicode ranges in paths; reject
		// control characters everywhere so a key valid in one shape is valid in the other.
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffd ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("segment %q contains the disallowed character %U", seg, r)
		}
	}
	return nil
}

// MaxData bounds the data of a value, a member or a leader. ZooKeeper refuses a request
// larger than its jute.maxbuffer (1 MiB by default, path and header included) by dropping
// the connection, which would cost the session's leaderships; both implementations refuse
// such data up front with a clear error instead.
const MaxData = 1_000_000

// CheckData reports data too large to store.
func CheckData(data []byte) error {
	if len(data) > MaxData {
		return fmt.Errorf("data of %d bytes exceeds the %d-byte limit of a coordinator value", len(data), MaxData)
	}
	return nil
}
