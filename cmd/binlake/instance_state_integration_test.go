//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// sinceRE is the SINCE of `instance list` and the time of `instance show`'s state.
const sinceRE = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \([0-9hms]+ ago\)`

// TestInstanceListShowsWaveState: on the real ZooKeeper and MariaDB, a wave runs three
// instances of the README's replication user: one whose password_env names a variable
// this process does not have, one with a wrong password, one right. `instance list` and
// `instance show` print the state and the error's class each leader recorded, since when,
// and the error naming the unset variable, as the wave's log does; no secret is printed.
// Once the wave stopped, the states read as last known.
func TestInstanceListShowsWaveState(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, _ := testenv.ScratchDatabase(t, "inststate")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
	user, password := readmeReplicationUser(t, db)
	const wrong = "wrong-s3cret-do-not-print"
	t.Setenv("BINLAKE_TEST_RIGHT_PASSWORD", password)
	t.Setenv("BINLAKE_TEST_WRONG_PASSWORD", wrong)
	t.Setenv("BINLAKE_TEST_UNSET_PASSWORD", "")
	os.Unsetenv("BINLAKE_TEST_UNSET_PASSWORD")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, zkAddr, root := testCoordinator(t, ctx, "inst-state")
	for id, env := range map[string]string{"nopw": "BINLAKE_TEST_UNSET_PASSWORD", "badpw": "BINLAKE_TEST_WRONG_PASSWORD", "good": "BINLAKE_TEST_RIGHT_PASSWORD"} {
		inst := &cluster.Instance{ID: id, Source: cluster.Source{Addr: a.Addr, User: user, PasswordEnv: env, Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
			Subscriptions: []cluster.Subscription{{Name: "all", Topic: "state.rows", Include: []string{db + `\..*`}}}}
		if id == "good" { // a format of another capture's, which show names with its options
			inst.Subscriptions[0].Format, inst.Subscriptions[0].FormatOptions = "debezium-json", map[string]string{"schema": "true", "decimal": "precise"}
		}
		if _, err := cluster.AddInstance(ctx, c, inst, "wave-s", nil); err != nil {
			t.Fatal(err)
		}
	}
	b := testBus(t)
	pub, _ := b.Publisher()
	var logBuf bytes.Buffer
	logs := &syncWriter{w: &logBuf}
	wv, _, stop := startWave(t, ctx, wave.Options{Node: "wave-s", Coord: c, Publisher: pub, Topics: b, TopicSpec: bus.TopicSpec{Partitions: 1},
		PollInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})

	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := runInstance(ctx, append(args, "-zk", zkAddr, "-root", root), &out, &errOut); err != nil {
			t.Fatalf("instance %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String()
	}
	lines := map[string]*regexp.Regexp{
		// Between its attempts a retrying instance has no leader.
		"nopw":  regexp.MustCompile(`(?m)^nopw +wave-s +(wave-s|-) +retrying, secret_missing +` + sinceRE + ` +-$`),
		"badpw": regexp.MustCompile(`(?m)^badpw +wave-s +(wave-s|-) +retrying, access_denied +` + sinceRE + ` +-$`),
		"good":  regexp.MustCompile(`(?m)^good +wave-s +wave-s +running +` + sinceRE + ` +\S.*$`),
	}
	var list string
	poll(t, "instance list showing each leader's state", time.Minute, func() (bool, string) {
		list = run("list")
		for _, re := range lines {
			if !re.MatchString(list) {
				return false, list
			}
		}
		return true, ""
	})
	t.Logf("instance list:\n%s", list)
	// The README's grants capture: a row of the good instance is published.
	exec("INSERT INTO " + db + ".t VALUES (1)")
	poll(t, "the row captured with the README's replication user", 30*time.Second, func() (bool, string) {
		return wv.Published("good") >= 1, ""
	})
	if !strings.HasPrefix(list, "ID") || !regexp.MustCompile(`^ID +ASSIGN +LEADER +STATE +SINCE +POSITION\n`).MatchString(list) {
		t.Errorf("instance list's header:\n%s", list)
	}

	show := run("show", "nopw", "-sample", "0")
	t.Logf("instance show nopw:\n%s", show)
	for _, re := range []string{
		`(?m)^state     retrying, secret_missing since ` + sinceRE + `$`,
		`(?m)^error     source password missing: source\.password_env names BINLAKE_TEST_UNSET_PASSWORD, which is not set in the environment of the process reading it \(a wave's unit reads it from /etc/binlake/wave\.env\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(show) {
			t.Errorf("instance show nopw lacks %s", re)
		}
	}
	show = run("show", "badpw", "-sample", "0")
	if !regexp.MustCompile(`(?m)^state     retrying, access_denied since ` + sinceRE + "\nerror     .*Access denied for user '" + user + "'").MatchString(show) {
		t.Errorf("instance show badpw:\n%s", show)
	}

	// The wave's log names the variable, and no secret.
	logs.mu.Lock()
	logText := logBuf.String()
	logs.mu.Unlock()
	if m := regexp.MustCompile(`.*instance=nopw .*BINLAKE_TEST_UNSET_PASSWORD, which is not set.*`).FindString(logText); m == "" {
		t.Errorf("the wave's log does not name the unset variable:\n%s", logText)
	} else {
		t.Logf("the wave's log: %s", m)
	}
	for _, text := range []string{logText, list, show, run("list", "-json")} {
		if strings.Contains(text, wrong) || strings.Contains(text, password) {
			t.Fatalf("a password was printed:\n%s", text)
		}
	}

	// Stopped: nothing leads the instances, and their states are the last known ones.
	stop()
	list = run("list")
	t.Logf("instance list after the wave stopped:\n%s", list)
	for _, re := range []string{
		`(?m)^nopw +wave-s +- +retrying, secret_missing \(last known\) +` + sinceRE + ` +-$`,
		`(?m)^good +wave-s +- +running \(last known\) +` + sinceRE + ` +\S.*$`,
	} {
		if !regexp.MustCompile(re).MatchString(list) {
			t.Errorf("instance list after the wave stopped lacks %s", re)
		}
	}
	show = run("show", "good", "-sample", "0")
	if !regexp.MustCompile(`(?m)^state     running since ` + sinceRE + `; last known: recorded by wave-s, which is not live now$`).MatchString(show) {
		t.Errorf("instance show good after the wave stopped:\n%s", show)
	}
	if want := "sub       all → state.rows include=[" + db + `\..*] exclude=[] events=[] format=debezium-json map[decimal:precise schema:true]` + "\n"; !strings.Contains(show, want) {
		t.Errorf("instance show good lacks %q:\n%s", want, show)
	}
	// What only -json showed (after a set -f, whether on_unreadable went back to stop).
	if want := "handling  on_unreadable stop, on_too_large stop\n"; !strings.Contains(show, want) {
		t.Errorf("instance show good lacks %q:\n%s", want, show)
	}
}

// TestInstanceListOnStoppedUp: after a `binlake up` that captured the test MariaDB
// stopped, `instance list -data` shows its instance's last known state as such, with its
// time, not as running.
func TestInstanceListOnStoppedUp(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, _, _ := testenv.ScratchDatabase(t, "up_stopped")
	dir := t.TempDir()
	// Its own database only: other tests share the server, and a rollback to a savepoint
	// over a non-transactional table (wave/capture's test of it) stops an instance that
	// reads that table (a run failed so, beside it).
	m := MySQL{Addr: a.Addr, User: a.User, Password: config.Secret(a.Password),
		Subscriptions: []cluster.Subscription{{Name: "own", Topic: "it.rows", Include: []string{db + `\..*`}}}}
	s := startUp(t, upOptions{DataDir: dir, Node: "wave-up", MySQL: &m})
	waitRunning(t, s.urls.Wave)
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"instance", "list", "-data", dir}, &out, &errOut); err != nil {
		t.Fatalf("instance list: %v\n%s", err, errOut.String())
	}
	t.Logf("instance list -data after up stopped:\n%s", out.String())
	if !regexp.MustCompile(`(?m)^` + InstanceID + ` +wave-up +- +running \(last known\) +` + sinceRE + ` +\S.*$`).MatchString(out.String()) {
		t.Fatalf("instance list -data after up stopped:\n%s\nwant %s's state as last known, with its time", out.String(), InstanceID)
	}
}
