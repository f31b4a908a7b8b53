package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"127.0.0.1:3306", "127.0.0.1:3306"},
		{"http://judge:8090", "http://judge:8090"},
		{"ops@example.com", "ops@example.com"}, // an e-mail address, a DSN's user alone
		{"repl@127.0.0.1:3306", "repl@127.0.0.1:3306"},
		{"repl:Hunter2Pw@127.0.0.1:3306", "repl:***@127.0.0.1:3306"},
		{"repl:Hunter2Pw@tcp(127.0.0.1:3306)/", "repl:***@tcp(127.0.0.1:3306)/"},
		{"repl:Hunter2Pw@tcp(127.0.0.1:3306)/shop?tls=true", "repl:***@tcp(127.0.0.1:3306)/shop?tls=true"},
		{"mysql://repl:Hunter2Pw@127.0.0.1:3306/shop", "mysql://repl:***@127.0.0.1:3306/shop"},
		{"http://admin:Hunter2J@127.0.0.1:18090", "http://admin:***@127.0.0.1:18090"},
		{"https://Hunter2Token@hooks.example.com/x", "https://***@hooks.example.com/x"}, // a token as the user
		{"kafka:S3cretKafka@127.0.0.1:9092", "kafka:***@127.0.0.1:9092"},
		{"u:p@ss:w/rd@host:1", "u:***@host:1"},               // the password ends at the last '@'
		{"http://u:a/b?c#d@host:1/", "http://u:***@host:1/"}, // unescaped '/', '?', '#' in it
		{"u:pa://ss@host:1", "u:***@host:1"},                 // "://" in a password is no scheme
		{"http://host/p?mail=a@b", "http://***@b"},           // a '@' past the userinfo hides more, never less
		{"mailto:ops@example.com", "mailto:***@example.com"}, // looks like user:password: hidden
		{"ops@example.com:25", "ops@example.com:25"},
		// Query parameters named as credentials; the others, and a DSN's, stay.
		{"http://wave:8080/metrics?token=Hunter2Tok", "http://wave:8080/metrics?token=***"},
		{"https://h/x?a=1&API_KEY=Hunter2&b=2#frag", "https://h/x?a=1&API_KEY=***&b=2#frag"},
		{"https://h/x?access_token=T&sig=S&page=2", "https://h/x?access_token=***&sig=***&page=2"},
		{"https://u:pw@h/x?password=P", "https://u:***@h/x?password=***"},
		{"https://h/x?token=", "https://h/x?token="}, // nothing to hide
		{"https://h/x?jwt=J&session=S&page=2", "https://h/x?jwt=***&session=***&page=2"},
		{"https://h/cb#access_token=T&state=1", "https://h/cb#access_token=***&state=1"},
		{"https://h/x?token=T#id_token=U", "https://h/x?token=***#id_token=***"},
		{"https://h/x#section-2", "https://h/x#section-2"},
		{"repl@tcp(h:3306)/shop?tls=skip-verify", "repl@tcp(h:3306)/shop?tls=skip-verify"},
	} {
		require.Equal(t, tc.want, Redact(tc.in), "Redact(%q)", tc.in)
	}
}

func TestBaseURLProblem(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"http://judge:8090", false},
		{"http://judge:8090/", false},
		{"https://judge.example/prefix", false},
		{"http://judge:8090/?region=eu", true},
		{"http://judge:8090?", true},
		{"http://judge:8090/#x", true},
		{"http://judge:8090/#", true},
		{"http://judge:8090/v1", true},
		{"http://judge:8090/v1/", true},
		{"http://judge:8090/v1/rebalance", true},
		{"https://proxy.example/binlake/judge/v1/", true},
		{"https://proxy.example/binlake/judge/", false},
		{"http://judge:8090/v10", false},
	} {
		require.Equal(t, tc.want, BaseURLProblem(tc.in) != "", "BaseURLProblem(%q)", tc.in)
	}
}

func TestURLHasCredentials(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"http://judge:8090", false},
		{"http://judge:8090/x@y", false},
		{"http://admin:Hunter2J@127.0.0.1:18090", true},
		{"http://admin@127.0.0.1:18090", true},
		{"https://Hunter2Token@hooks.example.com/x", true},
		{"http://u:a/b@host:1", true}, // url.Parse refuses it: judged by Redact
		{"http://wave:8080/metrics?token=Hunter2Tok", true},
		{"http://wave:8080/metrics?page=2", false},
		{"not a url", false},
	} {
		require.Equal(t, tc.want, URLHasCredentials(tc.in), "URLHasCredentials(%q)", tc.in)
	}
}

// Bad quotes a value as its caller wrote it, redacted: a future field's check is covered
// without its author thinking of it.
func TestBadRedactsValues(t *testing.T) {
	err := Bad("source.addr", "%q: want host:port", "repl:Hunter2Pw@127.0.0.1:3306")
	require.EqualError(t, err, `field "source.addr": "repl:***@127.0.0.1:3306": want host:port`)
	err = Bad("bus.brokers", "%v: want host:port each", []string{"a:1", "kafka:S3cretKafka@127.0.0.1:9092"})
	require.EqualError(t, err, `field "bus.brokers": [a:1 kafka:***@127.0.0.1:9092]: want host:port each`)
	inner := errors.New("wrapped")
	err = Bad("x", "%s %w", "plain", inner)
	require.ErrorIs(t, err, inner)
	require.EqualError(t, err, `field "x": plain wrapped`)
}

func TestCheckDialRedacts(t *testing.T) {
	for _, addr := range []string{"kafka:S3cretKafka@127.0.0.1:9092", "kafka:S3cretKafka@127.0.0.1", "u:S3cretKafka@h:x"} {
		for _, check := range []func(string) error{CheckDial, CheckListen} {
			err := check(addr)
			require.Error(t, err, addr)
			require.NotContains(t, err.Error(), "S3cretKafka")
			require.Contains(t, err.Error(), "want host:port, without a user or password")
		}
	}
	// A user alone is no host name either; it may stay in the message.
	require.EqualError(t, CheckDial("repl@127.0.0.1:9092"), `"repl@127.0.0.1:9092": want host:port, without a user or password`)
}

// A value of the wrong kind is quoted in the type error: redacted too.
func TestTypeErrorRedacts(t *testing.T) {
	msg := typeMsg("str", "kafka:S3cretKafka@127.0.0.1:9092", "[]string")
	require.False(t, strings.Contains(msg, "S3cretKafka"), msg)
	require.Contains(t, msg, "kafka:***@127.0.0.1:9092")
	// yaml's shortened form of it: "kafka:S..." would show the password's first letter.
	require.Equal(t, `string "kafka:..." where a list belongs`, typeMsg("str", "kafka:S...", "[]string"))
	require.Equal(t, `string "not a li..." where a list belongs`, typeMsg("str", "not a li...", "[]string"))
}

// An error wrapped with %w is not Bad's to redact: Locate hides every value of the file
// that holds a credential, wherever a check quoted it.
func TestLocateRedactsWrappedValues(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.yaml")
	require.NoError(t, os.WriteFile(f, []byte("sink:\n  url: \"http://u:Hunter2W@h:1\"\n"), 0o600))
	inner := fmt.Errorf("%q: unreachable", "http://u:Hunter2W@h:1")
	err := Locate(f, Bad("sink.url", "%w", inner))
	require.EqualError(t, err, f+`:2: field "sink.url": "http://u:***@h:1": unreachable`)
	require.ErrorIs(t, err, inner)
}
