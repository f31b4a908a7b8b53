package wave_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
)

// TestPasswordFixedInFileIntegration: on the real MariaDB, an instance runs as a
// replication user whose password is in a password_file. The user's password changes on
// the source and its binlog connection is killed: the instance retries, access_denied.
// Once the new password is written to the file, the instance runs again and its rows
// flow, with no wave restart. Before, the capture reconnected with the password read at
// the term's start and stayed access_denied until the wave restarted.
func TestPasswordFixedInFileIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	db, exec, conn := testenv.ScratchDatabase(t, "wave_pwfile")
	exec("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)")
	user := fmt.Sprintf("binlake_pw%d", time.Now().UnixNano()%1e9)
	const oldPW, newPW = "old-s3cret", "new-s3cret"
	exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + oldPW + "'")
	t.Cleanup(func() { exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	exec("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '" + user + "'@'%'")
	exec("GRANT SELECT ON " + db + ".* TO '" + user + "'@'%'")
	pwFile := filepath.Join(t.TempDir(), "source.password")
	if err := os.WriteFile(pwFile, []byte(oldPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	topic := "pwfile.rows"
	inst := &cluster.Instance{ID: "pwfile", Source: cluster.Source{Addr: a.Addr, User: user, PasswordFile: pwFile,
		Flavor: cluster.FlavorMariaDB, ServerID: testenv.ReplicaServerID()},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: topic, Include: []string{db + `\.t`}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := singleCoord(t)
	if _, err := cluster.AddInstance(ctx, c, inst, "wave-s", nil); err != nil {
		t.Fatal(err)
	}
	b, pub := memoryBus(t)
	wv, stop := runWave(t, ctx, wave.Options{Node: "wave-s", Coord: c, Publisher: pub, Topics: b, TopicSpec: bus.TopicSpec{Partitions: 1},
		PollInterval: 100 * time.Millisecond, Logger: testLogger(t)}) // the default Password: wave.SourcePassword
	defer stop()
	waitState(t, ctx, wv, inst.ID, cluster.StateRunning)
	exec("INSERT INTO " + db + ".t VALUES (1)")
	readUntil(t, ctx, b, topic, func(m received) bool { return m.typ == "insert" && m.id == "1" })

	exec("ALTER USER '" + user + "'@'%' IDENTIFIED BY '" + newPW + "'")
	r, err := conn.Execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND LIKE 'Binlog Dump%'", user)
	if err != nil || r.RowNumber() == 0 {
		t.Fatalf("the instance's binlog connection on the source: %v (%d found)", err, r.RowNumber())
	}
	for i := range r.RowNumber() {
		id, _ := r.GetUint(i, 0)
		exec(fmt.Sprintf("KILL %d", id))
	}
	waitReason(t, ctx, wv, inst.ID, wave.ReasonAccessDenied)

	exec("INSERT INTO " + db + ".t VALUES (2)") // written while the wave cannot log in
	if err := os.WriteFile(pwFile, []byte(newPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, wv, inst.ID, cluster.StateRunning)
	exec("INSERT INTO " + db + ".t VALUES (3)")
	got := map[string]bool{}
	for _, m := range readUntil(t, ctx, b, topic, func(m received) bool { return m.typ == "insert" && m.id == "3" }) {
		got[m.id] = true
	}
	if !got["2"] {
		t.Errorf("the row written while the password was wrong was not captured (ids seen: %v)", got)
	}
	for _, st := range wv.Status() {
		if strings.Contains(st.Error, newPW) || strings.Contains(st.Error, oldPW) {
			t.Errorf("a password in the status: %+v", st)
		}
	}
}

// waitReason waits until the wave shows instance id not running for reason.
func waitReason(t *testing.T, ctx context.Context, wv *wave.Wave, id, reason string) {
	t.Helper()
	for {
		for _, st := range wv.Status() {
			if st.ID == id && st.Reason == reason {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("instance %s never showed reason %s: %+v", id, reason, wv.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
