package testenv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/internal/mysqldsn"
)

// MySQLAddr is a parsed BINLAKE_TEST_MYSQL value: any address mysqldsn parses, with a
// database and parameters allowed (the tests ignore the parameters).
type MySQLAddr = mysqldsn.DSN

// RequireMySQL is Require for MySQL that also parses the address, failing the test when
// BINLAKE_TEST_MYSQL is malformed.
func RequireMySQL(t testing.TB) MySQLAddr {
	t.Helper()
	v := Require(t, MySQL)
	a, err := mysqldsn.Parse(v)
	if err != nil {
		t.Fatalf("%s: %v", MySQL.Env, err)
	}
	return a
}

// ReplicaServerID returns a random replica server id for a test's binlog reader. MariaDB
// lets one connection per server id read the binlog and drops the older one when a second
// arrives, so a fixed id in a test makes parallel runs on the shared test server (another
// checkout, another package) cut each other off.
func ReplicaServerID() uint32 {
	const low = 1000 // below: ids a hand-configured replica may use
	return low + rand.Uint32N(math.MaxUint32-low)
}

// ScratchDatabase connects to the test MySQL/MariaDB, creates a database named prefix
// and a suffix of the run's own, and drops it when the test ends. exec runs a statement
// and fails the test on an error.
func ScratchDatabase(t testing.TB, prefix string) (db string, exec func(q string), conn *client.Conn) {
	t.Helper()
	a := RequireMySQL(t)
	conn, err := client.Connect(a.Addr, a.User, a.Password, "")
	if err != nil {
		t.Fatalf("connect to MariaDB at %s: %v", a, err)
	}
	db = fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()%1e9)
	exec = func(q string) {
		t.Helper()
		if _, err := conn.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE " + db)
	t.Cleanup(func() {
		conn.Execute("DROP DATABASE IF EXISTS " + db)
		conn.Close()
	})
	return db, exec, conn
}

// EnvMySQLTLSCA names the PEM file of the CA that signs the test MariaDB's certificate
// (deploy/testenv/mariadb.sh; `services.sh env` sets it next to BINLAKE_TEST_MYSQL).
const EnvMySQLTLSCA = "BINLAKE_TEST_MYSQL_TLS_CA"

// RequireMySQLTLS is RequireMySQL for a test of TLS to the source: it also returns the
// CA file, failing the test when the variable is unset or the file missing.
func RequireMySQLTLS(t testing.TB) (MySQLAddr, string) {
	t.Helper()
	a := RequireMySQL(t)
	ca := os.Getenv(EnvMySQLTLSCA)
	if ca == "" {
		t.Fatalf("%s is set but %s is not (eval \"$(bash deploy/testenv/services.sh env)\")", MySQL.Env, EnvMySQLTLSCA)
	}
	if _, err := os.Stat(ca); err != nil {
		t.Fatalf("%s: %v (made by deploy/testenv/mariadb.sh up)", EnvMySQLTLSCA, err)
	}
	return a, ca
}

// TLSOnlyUser creates, through exec (ScratchDatabase's), a source user the server refuses
// without TLS (REQUIRE SSL), with what a capture needs: REPLICATION SLAVE and CLIENT, and
// SELECT on db. It is dropped when the test ends; its password is TLSOnlyPassword.
func TLSOnlyUser(t testing.TB, exec func(string), prefix, db string) string {
	t.Helper()
	user := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()%1e9)
	exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + TLSOnlyPassword + "' REQUIRE SSL")
	t.Cleanup(func() { exec("DROP USER '" + user + "'@'%'") })
	exec("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '" + user + "'@'%'")
	exec("GRANT SELECT ON " + db + ".* TO '" + user + "'@'%'")
	return user
}

// TLSOnlyPassword is the password of TLSOnlyUser's users.
const TLSOnlyPassword = "tls-only-pw"
