package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fieldConfig's Validate reports FieldErrors, as the roles' configs do.
type fieldConfig struct {
	HTTP struct {
		Listen string `yaml:"listen"`
	} `yaml:"http"`
	Store struct {
		Prefix  string   `yaml:"prefix"`
		Servers []string `yaml:"servers"`
	} `yaml:"store"`
}

func (c *fieldConfig) Validate() error {
	var errs []error
	if err := CheckListen(c.HTTP.Listen); c.HTTP.Listen != "" && err != nil {
		errs = append(errs, Bad("http.listen", "%w", err))
	}
	if !strings.HasSuffix(c.Store.Prefix, "-") {
		errs = append(errs, Bad("store.prefix", "%q must end in '-'", c.Store.Prefix))
	}
	for i, s := range c.Store.Servers {
		if err := CheckDial(s); err != nil {
			errs = append(errs, Bad(fmt.Sprintf("store.servers[%d]", i), "%w", err))
		}
	}
	if len(c.Store.Servers) == 0 {
		errs = append(errs, Bad("store.servers", "required"))
	}
	if c.Store.Prefix == "odd-" {
		errs = append(errs, errors.New("a problem of no one key"))
	}
	return errors.Join(errs...)
}

// A Validate error about a key names the file, the key's line and the key; an absent key
// the line of the nearest section the file has; several come in the file's order.
func TestDecodeLocatesValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // the lines of the error, in order
	}{
		{"listen port out of range", "store:\n  prefix: a-\n  servers: [z:1]\nhttp:\n  listen: 127.0.0.1:80911\n",
			[]string{`x.yaml:5: field "http.listen": "127.0.0.1:80911": port "80911": want a number from 0 to 65535 (0 picks a free one)`}},
		{"list item", "store:\n  prefix: a-\n  servers:\n    - z:1\n    - z\n",
			[]string{`x.yaml:5: field "store.servers[1]": "z": want host:port, e.g. kafka-1:9092`}},
		{"absent key: its section's line", "http:\n  listen: :1\n\nstore:\n  prefix: a-\n",
			[]string{`x.yaml:4: field "store.servers": required`}},
		{"several, in the file's order", "http:\n  listen: :99999\nstore:\n  servers: [z:0]\n  prefix: nc-metrics\n",
			[]string{
				`x.yaml:2: field "http.listen": ":99999": port "99999": want a number from 0 to 65535 (0 picks a free one)`,
				`x.yaml:4: field "store.servers[0]": "z:0": port "0": want a number from 1 to 65535`,
				`x.yaml:5: field "store.prefix": "nc-metrics" must end in '-'`,
			}},
		{"not about a key", "http:\n  listen: :1\nstore:\n  prefix: odd-\n  servers: [z:1]\n",
			[]string{`x.yaml: a problem of no one key`}},
		{"nothing of the path in the file", "http:\n  listen: :1\n",
			[]string{`x.yaml: field "store.prefix": "" must end in '-'`, `x.yaml: field "store.servers": required`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c fieldConfig
			err := Decode(strings.NewReader(tc.in), "x.yaml", &c)
			require.Error(t, err)
			require.Equal(t, strings.Join(tc.want, "\n"), err.Error())
		})
	}
}

// Locate reads the file again for the checks a role runs after loading it, and keeps
// the cause for errors.Is.
func TestLocate(t *testing.T) {
	f := filepath.Join(t.TempDir(), "judge.yaml")
	require.NoError(t, os.WriteFile(f, []byte("store:\n  kind: elastic\n  elastic:\n    prefix: nc-metrics\n"), 0o600))
	err := Locate(f, errors.Join(Bad("store.elastic.password_file", "%w", fs.ErrNotExist), Bad("store.elastic.prefix", "want a trailing '-'")))
	require.EqualError(t, err, f+`:3: field "store.elastic.password_file": file does not exist`+"\n"+
		f+`:4: field "store.elastic.prefix": want a trailing '-'`)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, Locate(f, nil))
	// An unreadable file: the errors still name it and the key.
	require.EqualError(t, Locate("/nonexistent/x.yaml", Bad("a.b", "bad")), `/nonexistent/x.yaml: field "a.b": bad`)
}

func TestCheckListenAndDial(t *testing.T) {
	for _, tc := range []struct {
		addr         string
		listen, dial string // the errors; "" for none
	}{
		{"127.0.0.1:8090", "", ""},
		{":0", "", `":0": port "0": want a number from 1 to 65535`},
		{"[::1]:65535", "", ""},
		{"127.0.0.1:80911", `"127.0.0.1:80911": port "80911": want a number from 0 to 65535 (0 picks a free one)`,
			`"127.0.0.1:80911": port "80911": want a number from 1 to 65535`},
		{"host:http", `"host:http": port "http": want a number from 0 to 65535 (0 picks a free one)`, `"host:http": port "http": want a number from 1 to 65535`},
		{"8090", `"8090": want host:port, e.g. 127.0.0.1:8090 (port 0 picks a free one)`, `"8090": want host:port, e.g. kafka-1:9092`},
		{"h:-1", `"h:-1": port "-1": want a number from 0 to 65535 (0 picks a free one)`, `"h:-1": port "-1": want a number from 1 to 65535`},
		{"0.0.0.0:8090", "", ""},
		{"[::]:8090", "", ""},
		// TEST-NET-1 (RFC 5737): no machine's address. The start's bind failed with
		// "cannot assign requested address" where the check passed it.
		{"192.0.2.1:8090", "!is not an address of this machine", ""},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			check := func(err error, want string) {
				switch {
				case want == "":
					require.NoError(t, err)
				case strings.HasPrefix(want, "!"):
					require.ErrorContains(t, err, want[1:])
				default:
					require.EqualError(t, err, want)
				}
			}
			check(CheckListen(tc.addr), tc.listen)
			check(CheckDial(tc.addr), tc.dial)
		})
	}
}

func TestCheckFilePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	require.NoError(t, CheckFilePath(filepath.Join(dir, "new", "deeper", "db")), "folders that can be made")
	require.NoError(t, CheckFilePath(file), "an existing file")
	require.EqualError(t, CheckFilePath(dir), dir+" is a folder: want a file path")
	require.EqualError(t, CheckFilePath(filepath.Join(file, "db")), file+"/db: "+file+" is a file, so no folder can be made there")
	require.EqualError(t, CheckFilePath(""), "empty: want a file path")
	// A relative path is the working directory's: the message says which, and that the
	// units run in their own (the documented check run from an operator's folder failed
	// where the unit would start: an outside trial).
	t.Chdir(dir)
	require.NoError(t, CheckFilePath("data/db"))
	require.EqualError(t, CheckFilePath("f/db"), "f/db: f is a file, so no folder can be made there (a relative path is from the working directory, "+
		dir+" here; the systemd units run in /var/lib/binlake/<role>: check from there, or give an absolute path)")
}
