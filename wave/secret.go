package wave

import (
	"errors"
	"fmt"
	"os"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
)

// ErrSecretMissing reports a source password that its definition names but this host
// does not have: password_env names an unset variable (one set empty is an empty
// password), or password_file a missing, empty or unreadable file. Connecting without it would only be refused by the source
// ("Access denied … using password: NO"), which names neither.
var ErrSecretMissing = errors.New("source password missing")

// SourcePassword reads a source's password on this host, from source.password_env or
// source.password_file; empty when the definition names neither (a user without a
// password). A named source that is not there is an ErrSecretMissing naming the variable
// or the file, never a value.
func SourcePassword(s cluster.Source) (config.Secret, error) {
	if _, set := os.LookupEnv(s.PasswordEnv); s.PasswordEnv != "" && !set {
		return "", fmt.Errorf("%w: source.password_env names %s, which is not set in the environment of the process reading it (a wave's unit reads it from /etc/binlake/wave.env)", ErrSecretMissing, s.PasswordEnv)
	}
	pw, err := config.SecretRef{File: s.PasswordFile, Env: s.PasswordEnv}.Resolve()
	if err != nil {
		return "", fmt.Errorf("%w: source.password_file: %w", ErrSecretMissing, err)
	}
	return pw, nil
}

// blankPasswordEnv reports whether s names a password variable that is set but blank
// (pw, as SourcePassword read it, is empty): a user without a password, or more often
// an env file's `VAR=` line left unfilled, which the source's refusal does not name.
func blankPasswordEnv(s cluster.Source, pw config.Secret) bool {
	return s.PasswordEnv != "" && s.PasswordFile == "" && pw == ""
}
