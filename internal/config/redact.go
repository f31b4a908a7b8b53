package config

import (
	"fmt"
	"net/url"
	"strings"
)

// URLCredentialsRefused is why a URL the suite connects to may not carry a user, a
// password or a credential in its query (?token=…): the URL is logged at start and
// quoted in errors. Each refusal adds where the credential goes instead ("use
// token_file or token_env").
const URLCredentialsRefused = "credentials in the URL would be logged"

// URLHasCredentials reports whether s, a URL, carries userinfo (user@ or user:password@)
// or a query parameter named as a credential (?token=…, &api_key=…: secretQueryName).
// A URL url.Parse refuses is judged by Redact, so that a malformed URL with a password
// in it is refused for the password too, not only quoted (redacted) as malformed.
func URLHasCredentials(s string) bool {
	if u, err := url.Parse(s); err == nil {
		return u.User != nil || redactQuery(s) != s
	}
	return Redact(s) != s
}

// Redact returns s, a value about to be shown in an error or a log line, with what may
// be a credential in it replaced by ***: the password of a user:password@ part (a
// host:port, a go-sql-driver DSN, a URL) and the whole userinfo of a URL without one
// (https://TOKEN@host holds a token). Everything else stays, the host and port first,
// so that the message is as specific as before. The userinfo ends at the last '@', as
// a password may contain '@', '/' or ':' unescaped: a '@' further on (in a query) makes
// more than the userinfo hidden, never less. A plain user@host (an e-mail address, a
// DSN's user) is left as it is. A URL's query parameters named as credentials
// (secretQueryName) have their values hidden too.
func Redact(s string) string {
	if i := strings.Index(s, "://"); i >= 0 && IsScheme(s[:i]) {
		s = redactQuery(s)
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s
	}
	start, isURL := 0, false
	if i := strings.Index(s[:at], "://"); i >= 0 && IsScheme(s[:i]) {
		start, isURL = i+len("://"), true
	}
	user, _, hasPassword := strings.Cut(s[start:at], ":")
	switch {
	case hasPassword:
		return s[:start] + user + ":" + Redacted + s[at:]
	case isURL:
		return s[:start] + Redacted + s[at:]
	}
	return s
}

// redactQuery returns the URL s with the value of each query parameter secretQueryName
// calls a credential replaced by ***, the other parameters and their order unchanged;
// the fragment's key=value pairs too (#access_token=… is how OAuth's implicit flow
// hands a token over).
func redactQuery(s string) string {
	q := strings.IndexAny(s, "?#")
	if q < 0 {
		return s
	}
	end := len(s)
	if h := strings.IndexByte(s[q+1:], '#'); h >= 0 && s[q] == '?' {
		end = q + 1 + h
	}
	params := strings.Split(s[q+1:end], "&")
	changed := false
	for i, p := range params {
		if k, v, ok := strings.Cut(p, "="); ok && v != "" && v != Redacted && secretQueryName(k) {
			params[i], changed = k+"="+Redacted, true
		}
	}
	rest := s[end:]
	if end < len(s) {
		if r := redactQuery(rest); r != rest {
			rest, changed = r, true
		}
	}
	if !changed {
		return s
	}
	return s[:q+1] + strings.Join(params, "&") + rest
}

// BaseURLProblem is what keeps s, a URL the suite appends its API's paths to (the
// judge's, the alarm's, an Elasticsearch node's), from being one: a query or a fragment,
// which the paths would land in (and which may hold a token that would be logged), or a
// path that is the suite's API's own (/v1, /v1/…): http://judge:8090/v1/ passed the
// checks and every call then went to /v1/v1/… and answered 404 (an outside trial). A
// path before it (a proxy's prefix) is fine. "" when it has none; the scheme and the
// host are each caller's to check.
func BaseURLProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(s, "#") {
		return "a query or a fragment: want the base URL alone, to which the API's paths are appended"
	}
	if i := strings.Index(u.Path+"/", "/v1/"); i >= 0 {
		return fmt.Sprintf("the API's own path: want the base URL alone (drop %q), to which the API's paths (/v1/…) are appended", u.Path[i:])
	}
	return ""
}

// secretQueryName says whether a query parameter's name calls its value a credential:
// it holds one of the words services use for them (token, access_token, password,
// passwd, pwd, secret, client_secret, key, api_key, apikey, sig, signature, auth,
// credential, jwt, bearer, session). It errs towards hiding: a routing_key is hidden too.
func secretQueryName(name string) bool {
	name = strings.ToLower(name)
	for _, w := range []string{"token", "pass", "pwd", "secret", "key", "sig", "auth", "credential", "jwt", "bearer", "session"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// redactArgs is args with every string (and list of strings) passed through Redact, so
// that Bad's callers quote a value with %q as they always have and no credential in it
// is shown; errors (%w) and other values pass as they are.
func redactArgs(args []any) []any {
	var out []any
	for i, a := range args {
		var r any
		switch v := a.(type) {
		case string:
			if s := Redact(v); s != v {
				r = s
			}
		case []string:
			if s := redactAll(v); s != nil {
				r = s
			}
		}
		if r == nil {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = r
	}
	if out == nil {
		return args
	}
	return out
}

// redactAll is v redacted, or nil when nothing in it needed to be.
func redactAll(v []string) []string {
	var out []string
	for i, s := range v {
		if r := Redact(s); r != s {
			if out == nil {
				out = append([]string(nil), v...)
			}
			out[i] = r
		}
	}
	return out
}

// IsScheme reports whether s is a URL scheme (RFC 3986: a letter, then letters, digits,
// '+', '-' or '.'), so that a password containing "://" is not taken for one.
func IsScheme(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !isLetter(c) && (c < '0' || c > '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
