package config

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// pathChildEnv makes the test binary the child of TestCheckPathAsTheRolesUser: it
// checks the paths the parent named and prints each verdict.
const pathChildEnv = "BINLAKE_TEST_CHECKPATH_CHILD"

// TestCheckPathAsTheRolesUser: as a user who cannot write a folder (the role's user of
// `sudo -u binlake binlake judge --check`), a store or file there is refused, naming the
// user and the folder; before, the check passed it and the start refused it. As root
// (CI) the checks run in a child process as nobody.
func TestCheckPathAsTheRolesUser(t *testing.T) {
	if dir := os.Getenv(pathChildEnv); dir != "" {
		for _, p := range []string{"ro/judge.db", "ro/sub/judge.db", "rw/judge.db", "ro/present.db", "rw/readonly.db"} {
			err := CheckStorePath(filepath.Join(dir, p))
			fileErr := CheckFilePath(filepath.Join(dir, p))
			os.Stdout.WriteString(p + "\t" + verdict(err) + "\t" + verdict(fileErr) + "\n")
		}
		return
	}
	base, err := os.MkdirTemp("", "checkpath")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	ro, rw := filepath.Join(base, "ro"), filepath.Join(base, "rw")
	require.NoError(t, os.Mkdir(ro, 0o755))
	require.NoError(t, os.Mkdir(rw, 0o777))
	require.NoError(t, os.Chmod(rw, 0o777)) // past the umask
	require.NoError(t, os.WriteFile(filepath.Join(ro, "present.db"), nil, 0o666))
	require.NoError(t, os.Chmod(filepath.Join(ro, "present.db"), 0o666))
	require.NoError(t, os.WriteFile(filepath.Join(rw, "readonly.db"), nil, 0o444))
	require.NoError(t, os.Chmod(base, 0o755))

	var out string
	if os.Getuid() == 0 {
		// The test binary where nobody can run it.
		bin := filepath.Join(base, "config.test")
		copyFile(t, os.Args[0], bin)
		cmd := exec.Command(bin, "-test.run=^TestCheckPathAsTheRolesUser$")
		cmd.Env = append(os.Environ(), pathChildEnv+"="+base)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, string(b))
		out = string(b)
	} else {
		require.NoError(t, os.Chmod(ro, 0o555))
		t.Cleanup(func() { os.Chmod(ro, 0o755) })
		t.Setenv(pathChildEnv, base)
		r, w, err := os.Pipe()
		require.NoError(t, err)
		stdout := os.Stdout
		os.Stdout = w
		TestCheckPathAsTheRolesUser(t)
		os.Stdout = stdout
		w.Close()
		b, _ := io.ReadAll(r)
		out = string(b)
	}
	got := map[string][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Split(line, "\t"); len(f) == 3 {
			got[f[0]] = [2]string{f[1], f[2]}
		}
	}
	want := map[string][2]string{ // store, file
		"ro/judge.db":     {"cannot write into " + ro + " to make it", "cannot write into " + ro + " to make it"},
		"ro/sub/judge.db": {"cannot write into " + ro + " to make it", "cannot write into " + ro + " to make it"},
		"rw/judge.db":     {"ok", "ok"},
		"ro/present.db":   {"cannot write into " + ro + " to keep its companion files", "ok"},
		"rw/readonly.db":  {"cannot read and write it", "cannot read and write it"},
	}
	require.Len(t, got, len(want), out)
	for p, w := range want {
		for i, kind := range []string{"store", "file"} {
			if w[i] == "ok" {
				require.Equal(t, "ok", got[p][i], "%s as a %s", p, kind)
				continue
			}
			require.Contains(t, got[p][i], w[i], "%s as a %s", p, kind)
			require.Contains(t, got[p][i], "permission denied", "%s as a %s", p, kind)
		}
	}
}

func verdict(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o755))
	require.NoError(t, os.Chmod(to, 0o755))
}
