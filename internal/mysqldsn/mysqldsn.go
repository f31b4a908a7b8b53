// Package mysqldsn parses the addresses of MySQL and MariaDB servers in the forms people
// paste: the go-sql-driver DSN "user[:password]@tcp(host:port)/[database][?params]", the
// short "user[:password]@host:port[/database]", and the URL
// "mysql://user[:password]@host[:port][/database][?params]" (or mariadb://). Both
// `binlake up --mysql` and the tests' BINLAKE_TEST_MYSQL use it; each decides what it
// accepts of the database and parameters.
package mysqldsn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/binlake/binlake/internal/config"
)

// DSN is a parsed address.
type DSN struct {
	User     string
	Password string
	Addr     string // host:port
	DB       string // may be empty
	Params   string // what follows '?', as written; may be empty
}

// String renders the address in the go-sql-driver form with the password as ***, so it
// can go into logs and failure messages.
func (d DSN) String() string {
	u := d.User
	if d.Password != "" {
		u += ":***"
	}
	s := fmt.Sprintf("%s@tcp(%s)/%s", u, d.Addr, d.DB)
	if d.Params != "" {
		s += "?" + d.Params
	}
	return s
}

const want = "want user[:password]@tcp(host:port)/ or mysql://user[:password]@host[:port]/"

// Parse parses s. The password ends at the last '@', so it may contain '@' and ':'; in
// the URL form user and password are %-encoded as in any URL, and the port defaults to
// 3306. Only the tcp network is supported. Errors quote s with its password as ***.
func Parse(s string) (DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DSN{}, errors.New("mysql DSN is empty: " + want)
	}
	if scheme, tail, ok := strings.Cut(s, "://"); ok && config.IsScheme(scheme) {
		if scheme != "mysql" && scheme != "mariadb" {
			return DSN{}, fmt.Errorf("mysql DSN: scheme %q: %s", scheme, want)
		}
		return parseURL(s, tail)
	}
	return parseDriver(s)
}

// parseDriver parses the go-sql-driver form and the short one.
func parseDriver(s string) (DSN, error) {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		// No user part: nothing is known to be a password, so s is not quoted.
		return DSN{}, errors.New("mysql DSN: no user: " + want)
	}
	var d DSN
	d.User, d.Password, _ = strings.Cut(s[:at], ":")
	rest := s[at+1:]
	switch {
	case strings.HasPrefix(rest, "tcp("):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return d, fmt.Errorf("mysql DSN %q: unclosed tcp(", Redact(s))
		}
		d.Addr, rest = rest[len("tcp("):end], rest[end+1:]
	case strings.Contains(rest, "("):
		return d, fmt.Errorf("mysql DSN %q: only tcp(host:port) is supported", Redact(s))
	default:
		end := strings.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		d.Addr, rest = rest[:end], rest[end:]
	}
	path, params, _ := strings.Cut(rest, "?")
	if path != "" && path[0] != '/' {
		return d, fmt.Errorf("mysql DSN %q: want /database after the address, got %q", Redact(s), path)
	}
	d.DB, d.Params = strings.TrimPrefix(path, "/"), params
	return d, check(s, d)
}

// parseURL parses what follows "mysql://" in s.
func parseURL(s, tail string) (DSN, error) {
	at := strings.LastIndex(tail, "@")
	if at < 0 {
		return DSN{}, errors.New("mysql DSN: no user: " + want)
	}
	rawUser, rawPW, _ := strings.Cut(tail[:at], ":")
	var d DSN
	var err error
	if d.User, err = url.PathUnescape(rawUser); err != nil {
		return DSN{}, fmt.Errorf("mysql DSN %q: the user has a bad %%-escape", Redact(s))
	}
	if d.Password, err = url.PathUnescape(rawPW); err != nil {
		// The error would quote the password's bad escape: say only where it is.
		return DSN{}, fmt.Errorf("mysql DSN %q: the password has a bad %%-escape (write %%25 for a literal %%)", Redact(s))
	}
	hostPath, params, _ := strings.Cut(tail[at+1:], "?")
	if strings.Contains(hostPath, "#") {
		return DSN{}, fmt.Errorf("mysql DSN %q: a #fragment is not supported", Redact(s))
	}
	host, path, _ := strings.Cut(hostPath, "/")
	if host == "" {
		return DSN{}, fmt.Errorf("mysql DSN %q: no host", Redact(s))
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "3306") // a URL may leave the port out
	}
	if d.DB, err = url.PathUnescape(path); err != nil {
		return DSN{}, fmt.Errorf("mysql DSN %q: the database has a bad %%-escape", Redact(s))
	}
	d.Addr, d.Params = host, params
	return d, check(s, d)
}

// check is what every form must hold: a user, host:port with a port from 1 to 65535, a
// database name without '/'.
func check(s string, d DSN) error {
	if d.User == "" {
		return fmt.Errorf("mysql DSN %q: empty user", Redact(s))
	}
	host, port, err := net.SplitHostPort(d.Addr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("mysql DSN %q: want host:port, got %q", Redact(s), d.Addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("mysql DSN %q: port %q: want a number from 1 to 65535", Redact(s), port)
	}
	if strings.Contains(d.DB, "/") {
		return fmt.Errorf("mysql DSN %q: database %q: want a name without '/'", Redact(s), d.DB)
	}
	return nil
}

// Redact returns s with the password of its user part as ***, for errors and logs: the
// rule every value shown in an error follows (config.Redact). A mysql:// or mariadb://
// URL without a password keeps its user: config.Redact hides a URL's lone user part
// (a token there, in other URLs), and the error then hid the one thing to check.
func Redact(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "://"); i >= 0 && !strings.ContainsAny(s, "?#") {
		if scheme := strings.ToLower(s[:i]); scheme == "mysql" || scheme == "mariadb" {
			if at := strings.LastIndexByte(s, '@'); at > i && !strings.Contains(s[i+3:at], ":") {
				return s
			}
		}
	}
	return config.Redact(s)
}
