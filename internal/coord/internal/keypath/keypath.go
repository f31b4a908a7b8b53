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
