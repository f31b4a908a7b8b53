package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML as a Go duration string ("10s", "5m",
// "1h30m"). A bare number is refused: "10" could mean seconds or nanoseconds, and a config
// must not be guessed at.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// Set parses s, so a Duration can be a flag.Value that overrides the file.
func (d *Duration) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler. Errors are returned as *yaml.TypeError so the
// decoder keeps the line number and Decode can name the field.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		// The yaml package's own wording, so Decode recognises it and names the field.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s into config.Duration (want e.g. \"10s\")", n.Line, n.ShortTag())}}
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}

// MarshalYAML implements yaml.Marshaler so a Duration round-trips.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

func parseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit, e.g. \"500ms\", \"10s\", \"5m\", \"1h30m\"", s)
	}
	return Duration(v), nil
}
