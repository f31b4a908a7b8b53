package mysqldsn

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/config"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     DSN
	}{
		{"driver form", "root@tcp(127.0.0.1:3307)/", DSN{User: "root", Addr: "127.0.0.1:3307"}},
		{"no slash", "repl@tcp(db:3306)", DSN{User: "repl", Addr: "db:3306"}},
		{"password and database", "u:p@tcp(127.0.0.1:3306)/shop", DSN{User: "u", Password: "p", Addr: "127.0.0.1:3306", DB: "shop"}},
		{"password with @ and :", "u:p@ss:w@tcp(h:1)/", DSN{User: "u", Password: "p@ss:w", Addr: "h:1"}},
		{"password with ? and ://", "u:a?b://c@tcp(h:1)/", DSN{User: "u", Password: "a?b://c", Addr: "h:1"}},
		{"params", "root@tcp(127.0.0.1:3307)/db?parseTime=true", DSN{User: "root", Addr: "127.0.0.1:3307", DB: "db", Params: "parseTime=true"}},
		{"short form", "repl:s3@cret@db.example:3306", DSN{User: "repl", Password: "s3@cret", Addr: "db.example:3306"}},
		{"short form with database", "root@127.0.0.1:3307/x", DSN{User: "root", Addr: "127.0.0.1:3307", DB: "x"}},
		{"short form with params", "root@h:1?tls=true", DSN{User: "root", Addr: "h:1", Params: "tls=true"}},
		{"ipv6", "root@tcp([::1]:3307)/", DSN{User: "root", Addr: "[::1]:3307"}},
		{"spaces around", "  root@tcp(h:1)/ ", DSN{User: "root", Addr: "h:1"}},
		{"url", "mysql://repl:s%40cret@db.example:3307/", DSN{User: "repl", Password: "s@cret", Addr: "db.example:3307"}},
		{"url default port", "mysql://root@127.0.0.1/", DSN{User: "root", Addr: "127.0.0.1:3306"}},
		{"url no slash", "mysql://root@127.0.0.1:3307", DSN{User: "root", Addr: "127.0.0.1:3307"}},
		{"url mariadb ipv6", "mariadb://u:p+q@[::1]:3307/", DSN{User: "u", Password: "p+q", Addr: "[::1]:3307"}},
		{"url ipv6 default port", "mysql://u@[::1]/", DSN{User: "u", Addr: "[::1]:3306"}},
		{"url @ in password", "mysql://u:pa@ss@h:1/", DSN{User: "u", Password: "pa@ss", Addr: "h:1"}},
		{"url database and params", "mysql://u@h:1/orders?tls=true", DSN{User: "u", Addr: "h:1", DB: "orders", Params: "tls=true"}},
		{"url params without slash", "mysql://u@h:1?tls=true", DSN{User: "u", Addr: "h:1", Params: "tls=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

// Bad addresses are errors that say what is wrong and never show the password (hunter2).
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", " ", "mysql DSN is empty"},
		{"no user", "tcp(127.0.0.1:3307)/", "no user"},
		{"url no user", "mysql://db.example:3306/", "no user"},
		{"empty user", ":hunter2@tcp(h:1)/", "empty user"},
		{"url empty user", "mysql://:hunter2@h:1/", "empty user"},
		{"unix socket", "u:hunter2@unix(/run/mysqld.sock)/", "only tcp(host:port)"},
		{"unclosed", "u:hunter2@tcp(h:3306", "unclosed tcp("},
		{"no port", "u:hunter2@tcp(h)/", "want host:port"},
		{"no host", "u:hunter2@tcp(:1)/", "want host:port"},
		{"port 0", "u:hunter2@tcp(h:0)/", `port "0"`},
		{"port too big", "mysql://u:hunter2@h:99999/", `port "99999"`},
		{"junk after the address", "u:hunter2@tcp(h:1)x", `want /database after the address, got "x"`},
		{"slash in database", "u:hunter2@tcp(h:1)/a/b", `database "a/b"`},
		{"bad password escape", "mysql://u:hunter2%zz@h/", "the password has a bad %-escape"},
		{"bad user escape", "mysql://u%zz:hunter2@h/", "the user has a bad %-escape"},
		{"url no host", "mysql://u:hunter2@/", "no host"},
		{"url fragment", "mysql://u:hunter2@h:1#x", "#fragment"},
		{"scheme", "postgres://u:hunter2@h/", `scheme "postgres"`},
		{"quoted redacted", "u:hunter2@tcp(h)/", `"u:***@tcp(h)/"`},
		{"url quoted redacted", "mysql://u:hunter2@h:0/", `"mysql://u:***@h:0/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) = %+v, %v; want an error saying %q", tc.in, d, err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Parse(%q): the error shows the password: %v", tc.in, err)
			}
		})
	}
}

func TestString(t *testing.T) {
	d := DSN{User: "u", Password: "s3cret", Addr: "h:1", DB: "d", Params: "x=y"}
	if got := d.String(); got != "u:***@tcp(h:1)/d?x=y" {
		t.Fatalf("String() = %q, want u:***@tcp(h:1)/d?x=y", got)
	}
	if got := (DSN{User: "u", Addr: "h:1"}).String(); got != "u@tcp(h:1)/" {
		t.Fatalf("String() = %q, want u@tcp(h:1)/", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"root:pw@tcp(127.0.0.1:3307)/", "u:p@tcp(h:1)/db?x=y", "u@h:1", "u:p@tcp(", "@", "u:p@unix(/x)/",
		"", "mysql://u:p%40@h/db", "mariadb://u@[::1]", "x://u@h", "u:a://b@tcp(h:1)/", " u:p@h:0 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// A password never shows: s's password, if it has one, replaced by a sentinel that
		// no wording contains, appears in neither the error nor Redact's output.
		if i, j, ok := passwordSpan(s); ok && !strings.Contains(s, sentinel) {
			withSentinel := s[:i] + sentinel + s[j:]
			if _, err := Parse(withSentinel); err != nil && strings.Contains(err.Error(), sentinel) {
				t.Fatalf("Parse(%q): the error shows the password: %v", withSentinel, err)
			}
			if r := Redact(withSentinel); strings.Contains(r, sentinel) {
				t.Fatalf("Redact(%q) = %q shows the password", withSentinel, r)
			}
		}
		d, err := Parse(s)
		if err != nil {
			return
		}
		host, port, perr := net.SplitHostPort(d.Addr)
		n, _ := strconv.Atoi(port)
		if d.User == "" || perr != nil || host == "" || n < 1 || n > 65535 || strings.Contains(d.DB, "/") {
			t.Fatalf("Parse(%q) accepted %+v", s, d)
		}
		if d.Password != "" && !strings.HasPrefix(d.String(), d.User+":***@tcp("+d.Addr+")/") {
			t.Fatalf("String() of %q = %s, want the password as ***", s, d)
		}
	})
}

const sentinel = "Zq7Xk9"

// passwordSpan is where the password of s's user part is, as Parse finds it: after the
// first ':' of what comes before the last '@'.
func passwordSpan(s string) (i, j int, ok bool) {
	trimmed := strings.TrimSpace(s)
	off := strings.Index(s, trimmed)
	s = trimmed
	if scheme, tail, found := strings.Cut(s, "://"); found && config.IsScheme(scheme) {
		off += len(s) - len(tail)
		s = tail
	}
	at := strings.LastIndex(s, "@")
	colon := strings.IndexByte(s, ':')
	if at < 0 || colon < 0 || colon > at {
		return 0, 0, false
	}
	return off + colon + 1, off + at, true
}

// TestRedact: a DSN's password is ***; a mysql:// URL without one keeps its user, which
// an error about the rest of the DSN then still shows (it showed ***@ in its place).
func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"root:pw@tcp(127.0.0.1:3307)/", "root:***@tcp(127.0.0.1:3307)/"},
		{"mysql://u:p%40@h/db", "mysql://u:***@h/db"},
		{"mysql://root@127.0.0.1:3307/shop", "mysql://root@127.0.0.1:3307/shop"},
		{" MariaDB://repl@[::1]/ ", "MariaDB://repl@[::1]/"},
		{"mysql://root@h/db?password=x", "mysql://***@h/db?password=***"},
		{"https://token@host/", "https://***@host/"}, // another URL's lone user part stays hidden
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
