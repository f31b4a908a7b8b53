package wave

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
)

// ErrSecretMissing reports a source password that its definition names but this host
// does not have: password_env names an unset or empty variable, or password_file a
// missing, empty or unreadable file. Connecting without it would only be refused by the
// source ("Access denied … using password: NO"), which names neither; a user without a
// password is a source that names neither. (An empty `VAR=` line in an env file is the
// usual slip, not a wish for no password.)
var ErrSecretMissing = errors.New("source password missing")

// SourcePassword reads a source's password on this host, from source.password_env or
// source.password_file; empty when the definition names neither (a user without a
// password). A named source that is not there is an ErrSecretMissing naming the variable
// or the file, never a value.
func SourcePassword(s cluster.Source) (config.Secret, error) {
	if v, set := os.LookupEnv(s.PasswordEnv); s.PasswordEnv != "" && !set {
		return "", fmt.Errorf("%w: source.password_env names %s, which is not set in the environment of the process reading it (a wave's unit reads it from /etc/binlake/wave.env)", ErrSecretMissing, s.PasswordEnv)
	} else if s.PasswordEnv != "" && strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("%w: source.password_env names %s, which is set but empty in the environment of the process reading it (for a user without a password, leave password_env out)", ErrSecretMissing, s.PasswordEnv)
	}
	pw, err := config.SecretRef{File: s.PasswordFile, Env: s.PasswordEnv}.Resolve()
	if err != nil {
		return "", fmt.Errorf("%w: source.password_file: %w", ErrSecretMissing, err)
	}
	return pw, nil
}
