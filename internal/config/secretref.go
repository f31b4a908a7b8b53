package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// JudgeTokenEnv is the variable of the judge's token, read by the judge (http.token_env)
// and by every client of its API (the agent's sink.http.token_env, the wave's
// balancer.judge_token_env, binlake instance): one secret, one variable.
const JudgeTokenEnv = "BINLAKE_JUDGE_TOKEN"

// SecretRef says where one secret (a password, a token, an API key) is read. Every
// secret of the suite's configs takes this one shape, two keys named after it:
// <name>_file, a file holding it, and <name>_env, an environment variable holding it,
// which wins when it is set and non-empty (so a deployment can override a file without
// editing it). A secret is never inline: a config is read, copied and committed more
// widely than its secrets should be. The roles' structs keep the two keys flat
// (password_file, password_env) and hand them to a SecretRef to check and read.
type SecretRef struct {
	File string
	Env  string
}

// IsSet reports whether either source is named.
func (r SecretRef) IsSet() bool { return r.File != "" || r.Env != "" }

// Resolve reads the secret: the variable when set and non-empty, else the file (trimmed
// of surrounding space; unreadable or empty is an error), else "". Its errors name the
// file, never a value.
func (r SecretRef) Resolve() (Secret, error) { return ResolveSecret("", r.Env, r.File) }

// ResolveToken is Resolve for a bearer token, which an HTTP header carries: one with a
// space, a line break or another control character inside (a file of two lines, say)
// could never be sent, and every request would be refused. Its error says where the
// token came from, never what it is.
func (r SecretRef) ResolveToken() (Secret, error) {
	tok, err := r.Resolve()
	if err != nil || tok == "" {
		return tok, err
	}
	if strings.ContainsFunc(tok.Reveal(), func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		from := "file " + r.File
		if r.Env != "" && strings.TrimSpace(os.Getenv(r.Env)) != "" {
			from = "variable " + r.Env
		}
		return "", fmt.Errorf("the token in %s has a space, a line break or a control character inside: an Authorization header cannot carry it", from)
	}
	return tok, nil
}

// Check checks the keys of the secret at the dotted path key ("http.token" for
// http.token_file and http.token_env): the variable's name, and the file, unless the
// variable is set and non-empty, readable and not empty. An unset variable is not an
// error: a service manager may set it for the running process only. Both problems are
// reported, joined.
func (r SecretRef) Check(key string) error {
	var errs []error
	if r.Env != "" && !reEnvName.MatchString(r.Env) {
		errs = append(errs, Bad(key+"_env", "%q is not an environment variable name", r.Env))
	}
	if err := checkPasswordFile(r.File, r.Env); err != nil {
		errs = append(errs, Bad(key+"_file", "%w", err))
	}
	return errors.Join(errs...)
}

// ValidEnvName reports whether name is a portable environment variable name.
func ValidEnvName(name string) bool { return reEnvName.MatchString(name) }

// InlineSecret is the message for a retired key (see Retirer) that held the secret
// name inline ("token", "password"), naming the keys beside it that replace it.
func InlineSecret(name string) string {
	return fmt.Sprintf("a secret is never inline: put it in a file named by %s_file, or in a variable named by %s_env", name, name)
}

// checkPasswordFile checks that a password file that will be read is readable and not
// empty: unless the variable env, which takes precedence, is set. An unset variable is
// not an error here: a service manager may set it only for the running process.
func checkPasswordFile(file, env string) error {
	if file == "" || (env != "" && strings.TrimSpace(os.Getenv(env)) != "") {
		return nil
	}
	_, err := ResolveSecret("", "", file)
	return err
}
