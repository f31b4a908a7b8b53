package wave

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/cluster"
)

// TestSourcePassword: a password_env naming an unset variable, and a
// password_file that is missing or empty, are ErrSecretMissing errors naming the variable
// or the file; a set one is read (blank: no password); a source naming neither has no
// password. No value is in
// an error.
func TestSourcePassword(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pw")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("file-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BINLAKE_TEST_PW_SET", "env-s3cret")
	t.Setenv("BINLAKE_TEST_PW_BLANK", " ")
	t.Setenv("BINLAKE_TEST_PW_UNSET", "")
	os.Unsetenv("BINLAKE_TEST_PW_UNSET")

	for _, tc := range []struct {
		src   cluster.Source
		want  string // the password, or the error's text
		fails bool
	}{
		{cluster.Source{}, "", false},
		{cluster.Source{PasswordEnv: "BINLAKE_TEST_PW_SET"}, "env-s3cret", false},
		{cluster.Source{PasswordFile: good}, "file-s3cret", false},
		{cluster.Source{PasswordEnv: "BINLAKE_TEST_PW_UNSET"}, "source password missing: source.password_env names BINLAKE_TEST_PW_UNSET, which is not set in the environment of the process reading it (a wave's unit reads it from /etc/binlake/wave.env)", true},
		{cluster.Source{PasswordEnv: "BINLAKE_TEST_PW_BLANK"}, "", false}, // set: a user without a password
		{cluster.Source{PasswordFile: filepath.Join(dir, "missing")}, "source password missing: source.password_file: read secret: open " + filepath.Join(dir, "missing") + ": no such file or directory", true},
		{cluster.Source{PasswordFile: empty}, "source password missing: source.password_file: read secret: file " + empty + " is empty", true},
	} {
		pw, err := SourcePassword(tc.src)
		switch {
		case tc.fails && (err == nil || err.Error() != tc.want || !errors.Is(err, ErrSecretMissing) || Reason(err) != ReasonSecretMissing):
			t.Errorf("SourcePassword(%+v) = %v, want the error %q (ErrSecretMissing)", tc.src, err, tc.want)
		case tc.fails && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("SourcePassword(%+v): the error shows a secret: %v", tc.src, err)
		case !tc.fails && (err != nil || pw.Reveal() != tc.want):
			t.Errorf("SourcePassword(%+v) = %v, %v; want %q", tc.src, pw, err, tc.want)
		}
	}
}

// TestBlankPasswordEnv: a password variable set but blank is told apart (the source's
// refusal says only "using password: NO"); a file, or no variable, is not.
func TestBlankPasswordEnv(t *testing.T) {
	for _, tc := range []struct {
		src  cluster.Source
		pw   string
		want bool
	}{
		{cluster.Source{PasswordEnv: "V"}, "", true},
		{cluster.Source{PasswordEnv: "V"}, "x", false},
		{cluster.Source{}, "", false},
		{cluster.Source{PasswordFile: "/f"}, "", false},
	} {
		if got := blankPasswordEnv(tc.src, config.Secret(tc.pw)); got != tc.want {
			t.Errorf("blankPasswordEnv(%+v, %q) = %v, want %v", tc.src, tc.pw, got, tc.want)
		}
	}
}
