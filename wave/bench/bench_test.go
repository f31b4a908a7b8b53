package bench

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/testenv"
)

func TestOptionsErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"negative rows", Options{Rows: -1}, "rows -1"},
		{"negative partitions", Options{Partitions: -2}, "partitions -2"},
		{"bad address", Options{Addr: "localhost"}, `source address "localhost"`},
		{"negative batch", Options{BatchRows: -5}, "batch rows -5"},
		{"unknown format", Options{Format: "avro"}, `format "avro": unknown; known formats: `},
		// Before the rows are loaded: after the capture, the run lost its figure (an
		// outside trial).
		{"unknown codec", Options{Compression: "bogus", MariadbBinlog: "-"}, `compression "bogus": want none, gzip, snappy, lz4 or zstd`},
		{"no reference decoder", Options{MariadbBinlog: "/nonexistent/mariadb-binlog"}, "-mariadb-binlog /nonexistent/mariadb-binlog: "},
		// It names a database and a topic: letters, digits and _ only.
		{"prefix with a dash", Options{Prefix: "my-bench", MariadbBinlog: "-"}, `-prefix "my-bench": want a letter`},
		{"prefix from a digit", Options{Prefix: "9bench", MariadbBinlog: "-"}, `-prefix "9bench"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.setDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	o := Options{MariadbBinlog: "-"}
	if err := o.setDefaults(); err != nil || o.Rows != 1_000_000 || o.Addr != "127.0.0.1:3307" || o.Prefix != DefaultPrefix {
		t.Fatalf("defaults: %v %+v", err, o)
	}
}

// TestRunIntegration runs the benchmark small: every row reaches the broker, the
// reference decoder runs over the same range, and the report names both rates.
func TestRunIntegration(t *testing.T) {
	a := testenv.RequireMySQL(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := Run(ctx, Options{Rows: 3000, Addr: a.Addr, User: a.User, Password: configSecret(a.Password),
		Brokers: strings.Split(brokers, ","), Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if res.OnBroker != 3000 || res.Messages != 3000 || res.Published != 3000 || res.Bytes <= 0 || res.Binlog <= 0 {
		t.Errorf("result %+v: want 3000 messages on the broker and counted", res)
	}
	if res.Reference <= 0 || res.RefBytes <= 0 {
		t.Errorf("reference did not run: %+v", res)
	}
	for _, want := range []string{"wave capture to Kafka: 3000 rows", "mariadb-binlog decode (reference)", "ratio wave/mariadb-binlog"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}

// TestDropStale: a run drops what runs killed before their cleanup left (databases of
// the bench's prefix whose tables are older than the age), says so, and leaves the rest.
func TestDropStale(t *testing.T) {
	a := testenv.RequireMySQL(t)
	conn, err := client.Connect(a.Addr, a.User, a.Password, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const prefix = "binlake_staletest_"
	for _, db := range []string{prefix + "old", prefix + "new", "binlakeXstaletest_other"} {
		if _, err := conn.Execute("DROP DATABASE IF EXISTS " + db); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Execute("CREATE DATABASE " + db); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Execute("CREATE TABLE " + db + ".t (id INT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		defer conn.Execute("DROP DATABASE IF EXISTS " + db)
	}
	time.Sleep(3100 * time.Millisecond) // CREATE_TIME and NOW() are whole seconds
	if _, err := conn.Execute("DROP TABLE " + prefix + "new.t"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Execute("CREATE TABLE " + prefix + "new.t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := dropStale(conn, prefix, 2*time.Second, &out); err != nil {
		t.Fatal(err)
	}
	r, err := conn.Execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (?, ?, ?) ",
		prefix+"old", prefix+"new", "binlakeXstaletest_other")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for i := range r.RowNumber() {
		s, _ := r.GetString(i, 0)
		left = append(left, s)
	}
	slices.Sort(left)
	if want := []string{"binlakeXstaletest_other", prefix + "new"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v (the old one dropped, '_' in the prefix not a wildcard)", left, want)
	}
	if !strings.Contains(out.String(), "dropping "+prefix+"old") || strings.Contains(out.String(), prefix+"new") {
		t.Errorf("output %q: want the old one named, and only it", out.String())
	}
}

func configSecret(s string) config.Secret { return config.Secret(s) }
