package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Redacted is what a Secret prints as, everywhere.
const Redacted = "***"

// Secret is a string that never shows its value: fmt (every verb), slog, JSON and YAML all
// print "***". Call Reveal where the value is really needed (a DSN, an auth header) and
// never log the result.
type Secret string

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer.
func (s Secret) String() string { return Redacted }

// GoString implements fmt.GoStringer, for %#v.
func (s Secret) GoString() string { return `config.Secret("` + Redacted + `")` }

// Format implements fmt.Formatter so that no verb (%s, %q, %x, %d…) can print the value.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		io.WriteString(f, s.GoString())
		return
	}
	io.WriteString(f, Redacted)
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler (used by encoders that prefer it, and by
// slog's text handler for map keys and the like).
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// MarshalYAML implements yaml.Marshaler.
func (s Secret) MarshalYAML() (any, error) { return Redacted, nil }

// ErrSecretSources is returned (wrapped) when a secret is given both inline and as a file.
var ErrSecretSources = errors.New("secret given both inline and as a file")

// ResolveSecret picks a secret from its possible sources, in this order:
//
//  1. the environment variable envName, if envName is set and the variable is non-empty
//     (so deployments can override a file without editing it);
//  2. the file at path file, if file is set (its content, trimmed of surrounding space,
//     since editors add a final newline); an unreadable or empty file is an error;
//  3. value, the inline config value.
//
// Setting both value and file is an error: one of them would silently be ignored.
// The result may be empty when no source is set; callers decide whether that is allowed.
func ResolveSecret(value Secret, envName, file string) (Secret, error) {
	if value != "" && file != "" {
		return "", fmt.Errorf("%w (file %s): set only one", ErrSecretSources, file)
	}
	if envName != "" {
		if v := strings.TrimSpace(os.Getenv(envName)); v != "" {
			return Secret(v), nil
		}
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			// The *PathError names the file, never its content.
			return "", fmt.Errorf("read secret: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("read secret: file %s is empty", file)
		}
		return Secret(v), nil
	}
	return Secret(strings.TrimSpace(string(value))), nil
}
