package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.setDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	var o Options
	if err := o.setDefaults(); err != nil || o.Rows != 1_000_000 || o.Addr != "127.0.0.1:3307" {
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

func configSecret(s string) config.Secret { return config.Secret(s) }
