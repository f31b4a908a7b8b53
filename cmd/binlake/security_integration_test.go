//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/internal/testenv"
	"github.com/binlake/binlake/wave/cluster"
)

// saslKafka is a Kafka section for the test broker's SASL_SSL listener, SCRAM-SHA-512.
func saslKafka(env testenv.KafkaSASLEnv) config.Kafka {
	return config.Kafka{Brokers: []string{env.Addr}, Partitions: 1, Replication: 1,
		TLS:  &config.ClientTLS{CAFile: env.CAFile},
		SASL: config.KafkaSASL{Mechanism: config.SASLScramSHA512, Username: env.ScramUser, PasswordFile: env.ScramPasswordFile}}
}

// TestSubscribeSASLIntegration: the judge's and the alarm's bus (Subscribe) over SASL_SSL,
// and the error of a wrong password.
func TestSubscribeSASLIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := fmt.Sprintf("wiring-sasl-%d", time.Now().UnixNano())
	b := config.Bus{Kafka: saslKafka(env), Topic: topic}
	require.NoError(t, b.Validate("wiring-sasl", config.StartOldest))
	sub, closeFn, desc, err := Subscribe(ctx, b, "wiring-sasl", quiet)
	require.NoError(t, err)
	defer closeFn()
	require.Contains(t, desc, "(SASL_SSL SCRAM-SHA-512 as user "+env.ScramUser+")")

	got := make(chan string, 1)
	go sub.Subscribe(ctx, func(_ context.Context, m bus.Message) error {
		select {
		case got <- string(m.Value):
		default:
		}
		return nil
	})
	opts := kafka.Options{Logger: quiet}
	require.NoError(t, opts.FromConfig(b.Kafka, "bus"))
	k, err := kafka.New(opts)
	require.NoError(t, err)
	defer k.Close()
	pub, err := k.Publisher()
	require.NoError(t, err)
	defer pub.Close()
	require.NoError(t, pub.Publish(ctx, bus.Message{Topic: topic, Key: []byte("k"), Value: []byte("hello")}))
	select {
	case v := <-got:
		require.Equal(t, "hello", v)
	case <-ctx.Done():
		t.Fatal("no message delivered")
	}

	t.Setenv("BINLAKE_TEST_WIRING_PW", "wrong-pw-1234")
	bad := b
	bad.SASL.PasswordFile, bad.SASL.PasswordEnv = "", "BINLAKE_TEST_WIRING_PW"
	_, _, _, err = Subscribe(ctx, bad, "wiring-sasl", quiet)
	require.ErrorContains(t, err, "SASL SCRAM-SHA-512 authentication as user")
	require.NotContains(t, err.Error(), "wrong-pw-1234")
}

// TestAgentCommandKafkaSASLIntegration runs `binlake agent` from a YAML file whose Kafka
// sink uses TLS with the test CA and SCRAM-SHA-512 with the password in a variable, and
// reads its batches back; the password is in neither the logs nor the output.
func TestAgentCommandKafkaSASLIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	pw, err := os.ReadFile(env.ScramPasswordFile)
	require.NoError(t, err)
	password := strings.TrimSpace(string(pw))
	t.Setenv("BINLAKE_TEST_AGENT_KAFKA_PW", password)
	topic := fmt.Sprintf("agent-sasl-%d", time.Now().UnixNano())
	cfg := fmt.Sprintf(`node: sasl-agent
interval: 100ms
http: {listen: "off"}
sink:
  kind: kafka
  kafka:
    brokers: [%s]
    topic: %s
    partitions: 1
    tls:
      ca_file: %s
    sasl:
      mechanism: scram-sha-512
      username: %s
      password_env: BINLAKE_TEST_AGENT_KAFKA_PW
`, env.Addr, topic, env.CAFile, env.ScramUser)
	path := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, stop := context.WithCancel(ctx)
	var logs, out bytes.Buffer
	errc := make(chan error, 1)
	go func() {
		errc <- run(actx, []string{"agent", "-config", path}, &syncWriter{w: &out}, &syncWriter{w: &logs})
	}()

	opts := kafka.Options{Logger: quiet}
	k := saslKafka(env)
	require.NoError(t, opts.FromConfig(k, "bus"))
	b, err := kafka.New(opts)
	require.NoError(t, err)
	defer b.Close()
	// The agent creates its topic; wait for it before subscribing.
	var sub bus.Subscriber
	for {
		sub, err = b.Subscriber(bus.SubscribeOptions{Topic: topic, Group: topic + ".reader", StartAt: bus.StartFirst})
		require.NoError(t, err)
		got := make(chan metric.Batch, 1)
		serr := make(chan error, 1)
		sctx, scancel := context.WithCancel(ctx)
		go func() {
			serr <- sub.Subscribe(sctx, func(_ context.Context, m bus.Message) error {
				mb, err := metric.Decode(m.Value)
				if err == nil {
					select {
					case got <- mb:
					default:
					}
				}
				return nil
			})
		}()
		select {
		case mb := <-got:
			scancel()
			<-serr
			require.Equal(t, "sasl-agent", mb.Node)
			stop()
			require.NoError(t, <-errc)
			require.NotContains(t, logs.String(), password)
			require.NotContains(t, out.String(), password)
			return
		case err := <-serr:
			scancel()
			sub.Close()
			if !errors.Is(err, bus.ErrUnknownTopic) {
				t.Fatalf("subscribe: %v; agent logs:\n%s", err, logs.String())
			}
			time.Sleep(200 * time.Millisecond)
		case err := <-errc:
			t.Fatalf("agent ended: %v; logs:\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("no batch from the agent; logs:\n%s", logs.String())
		}
	}
}

// TestOpenZKCoordinatorAuthIntegration: coordinator.auth gives the nodes a digest ACL that
// a client without the credentials cannot pass.
func TestOpenZKCoordinatorAuthIntegration(t *testing.T) {
	addr := testenv.Require(t, testenv.ZooKeeper)
	pwFile := filepath.Join(t.TempDir(), "zk.password")
	require.NoError(t, os.WriteFile(pwFile, []byte("zk-wiring-secret\n"), 0o600))
	root := fmt.Sprintf("/wiring-auth-test-%d", time.Now().UnixNano())
	cc := config.Coordinator{Kind: config.CoordZK, Servers: []string{addr}, Root: root,
		Auth: config.CoordAuth{Username: "binlake", PasswordFile: pwFile}}
	require.NoError(t, cc.Validate(""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, desc, err := Open(ctx, cc, quiet)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "zk "+addr+" root "+root+" (digest auth as binlake)", desc)
	_, err = c.Put(ctx, "k", []byte("v"), coord.AnyVersion)
	require.NoError(t, err)

	anon, _, err := gozk.Connect([]string{addr}, 4*time.Second, gozk.WithLogger(nopLogger{}), gozk.WithLogInfo(false))
	require.NoError(t, err)
	defer anon.Close()
	_, _, err = anon.Get(root + "/k")
	require.ErrorIs(t, err, gozk.ErrNoAuth)

	owner, _, err := gozk.Connect([]string{addr}, 4*time.Second, gozk.WithLogger(nopLogger{}), gozk.WithLogInfo(false))
	require.NoError(t, err)
	defer owner.Close()
	require.NoError(t, owner.AddAuth("digest", []byte("binlake:zk-wiring-secret")))
	data, _, err := owner.Get(root + "/k")
	require.NoError(t, err)
	require.Equal(t, "v", string(data))

	// binlake instance reaches the protected root with -zk-user, and only with it.
	t.Setenv(zkPasswordEnv, "")
	inst := &cluster.Instance{ID: "orders", Source: cluster.Source{Addr: "127.0.0.1:3307", User: "u", Flavor: cluster.FlavorMariaDB, ServerID: 9},
		Subscriptions: []cluster.Subscription{{Name: "all", Topic: "t"}}}
	_, err = cluster.AddInstance(ctx, c, inst, "wave-1", nil)
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	require.NoError(t, runInstance(ctx, []string{"list", "-zk", addr, "-root", root, "-zk-user", "binlake", "-zk-password-file", pwFile}, &out, &errOut),
		errOut.String())
	require.Contains(t, out.String(), "orders")
	err = runInstance(ctx, []string{"list", "-zk", addr, "-root", root}, &out, &errOut)
	require.ErrorContains(t, err, "not authenticated", "instance list without the digest credentials")
	err = runInstance(ctx, []string{"list", "-zk", addr, "-root", root, "-zk-user", "binlake"}, &out, &errOut)
	require.ErrorContains(t, err, "-zk-user binlake: give -zk-password-file or set "+zkPasswordEnv)
	// So does binlake tail, which reads the instance's subscriptions there (a subscription
	// it does not have ends it before Kafka is asked).
	err = runTail(ctx, []string{"orders/audit", "-zk", addr, "-root", root, "-zk-user", "binlake", "-zk-password-file", pwFile, "-brokers", "127.0.0.1:1"}, &out, &errOut)
	require.EqualError(t, err, `tail: instance orders has no subscription "audit"; it has all (→ t)`)
	err = runTail(ctx, []string{"orders", "-zk", addr, "-root", root, "-brokers", "127.0.0.1:1"}, &out, &errOut)
	require.ErrorContains(t, err, "not authenticated", "tail without the digest credentials")

	require.NoError(t, c.Delete(ctx, cluster.Instances, coord.AnyVersion))
	require.NoError(t, c.Delete(ctx, path.Dir(cluster.AddLockKey), coord.AnyVersion)) // the adds' election
	require.NoError(t, owner.Delete(root+"/k", -1))
	require.NoError(t, owner.Delete(root, -1))

	cc.Auth = config.CoordAuth{Username: "binlake", PasswordFile: filepath.Join(t.TempDir(), "missing")}
	_, _, err = Open(ctx, cc, quiet)
	require.ErrorContains(t, err, `field "coordinator.auth.password_file": read secret`)
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// TestTailSASLIntegration: binlake tail reads a topic over SASL_SSL with the -tls-* and
// -sasl-* flags (the password from the file, or from BINLAKE_KAFKA_PASSWORD), and names
// what is wrong when the password is.
func TestTailSASLIntegration(t *testing.T) {
	env := testenv.RequireKafkaSASL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := fmt.Sprintf("tail-sasl-%d", time.Now().UnixNano())
	opts := kafka.Options{Logger: quiet}
	require.NoError(t, opts.FromConfig(saslKafka(env), "bus"))
	k, err := kafka.New(opts)
	require.NoError(t, err)
	defer k.Close()
	require.NoError(t, k.CreateTopic(ctx, bus.TopicSpec{Name: topic, Partitions: 1, Replication: 1}))
	pub, err := k.Publisher()
	require.NoError(t, err)
	defer pub.Close()
	require.NoError(t, pub.Publish(ctx, bus.Message{Topic: topic, Key: []byte("k"), Value: []byte(
		`{"instance":"o","database":"d","table":"t","type":"insert","ts":0,"commit":true,"pk":{"id":1},"data":{"id":1}}`)}))

	args := []string{"-topic", topic, "-brokers", env.Addr, "-tls-ca-file", env.CAFile,
		"-sasl-mechanism", config.SASLScramSHA512, "-sasl-user", env.ScramUser, "-from", "start", "-o", "line"}
	var out, errOut bytes.Buffer
	require.NoError(t, runTail(ctx, append(args, "-sasl-password-file", env.ScramPasswordFile), &out, &errOut), errOut.String())
	require.Equal(t, topic+` 0:0 1970-01-01T00:00:00Z o insert d.t {"id":1} {"id":1} commit`+"\n", out.String())

	t.Setenv(kafkaPasswordEnv, "wrong-pw-1234")
	err = runTail(ctx, args, &out, &errOut)
	require.ErrorContains(t, err, "SASL SCRAM-SHA-512 authentication as user")
	require.NotContains(t, err.Error(), "wrong-pw-1234")
	t.Setenv(kafkaPasswordEnv, "")
	err = runTail(ctx, args, &out, &errOut)
	require.EqualError(t, err, "tail: -sasl-user "+env.ScramUser+": no password: give -sasl-password-file or set "+kafkaPasswordEnv)
}
