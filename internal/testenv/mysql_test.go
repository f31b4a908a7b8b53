package testenv

import (
	"strings"
	"testing"
)

func TestParseMySQLAddr(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    MySQLAddr
		wantErr string
	}{
		{name: "test default", in: "root@tcp(127.0.0.1:3307)/", want: MySQLAddr{User: "root", Addr: "127.0.0.1:3307"}},
		{name: "password and db", in: "u:p@tcp(127.0.0.1:3306)/shop", want: MySQLAddr{User: "u", Password: "p", Addr: "127.0.0.1:3306", DB: "shop"}},
		{name: "password with @ and :", in: "u:p@ss:w@tcp(h:1)/", want: MySQLAddr{User: "u", Password: "p@ss:w", Addr: "h:1"}},
		{name: "params ignored", in: "root@tcp(127.0.0.1:3307)/db?parseTime=true", want: MySQLAddr{User: "root", Addr: "127.0.0.1:3307", DB: "db"}},
		{name: "plain host port", in: "root@127.0.0.1:3307", want: MySQLAddr{User: "root", Addr: "127.0.0.1:3307"}},
		{name: "plain host port db", in: "root@127.0.0.1:3307/x", want: MySQLAddr{User: "root", Addr: "127.0.0.1:3307", DB: "x"}},
		{name: "ipv6", in: "root@tcp([::1]:3307)/", want: MySQLAddr{User: "root", Addr: "[::1]:3307"}},
		{name: "empty", in: " ", wantErr: "empty"},
		{name: "no user", in: "tcp(127.0.0.1:3307)/", wantErr: "no user"},
		{name: "unix socket", in: "root@unix(/tmp/s)/", wantErr: "only the tcp network"},
		{name: "unclosed", in: "root@tcp(127.0.0.1:3307/", wantErr: "unclosed"},
		{name: "no port", in: "root@tcp(127.0.0.1)/", wantErr: "host:port"},
		{name: "junk after addr", in: "root@tcp(127.0.0.1:3307)x", wantErr: "want /database"},
		{name: "password redacted", in: "root:s3cret@tcp(127.0.0.1)/", wantErr: "root:***@"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMySQLAddr(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseMySQLAddr(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error leaks the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMySQLAddr(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseMySQLAddr(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestMySQLAddrStringHidesPassword(t *testing.T) {
	a := MySQLAddr{User: "u", Password: "s3cret", Addr: "h:1", DB: "d"}
	if got := a.String(); strings.Contains(got, "s3cret") || got != "u:***@tcp(h:1)/d" {
		t.Fatalf("String() = %q", got)
	}
}

func FuzzParseMySQLAddr(f *testing.F) {
	for _, s := range []string{"root@tcp(127.0.0.1:3307)/", "u:p@tcp(h:1)/db?x=y", "root@h:1", "root@tcp(", "@", "tcp()/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseMySQLAddr(s)
		if err != nil {
			return
		}
		if a.User == "" || a.Addr == "" {
			t.Fatalf("ParseMySQLAddr(%q) accepted %+v without user or addr", s, a)
		}
	})
}
