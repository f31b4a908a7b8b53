package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/binlake/binlake/alarm"
	"github.com/binlake/binlake/alarm/policy"
	"github.com/binlake/binlake/internal/benchkit"
)

// channel is the name of the webhook channel every policy notifies.
const channel = "bench-webhook"

// env is what a run sets up around the alarm: a temporary folder with the generated
// alarm.yaml, policies.yaml, the coordinator's file and the alarm's log, and a topic
// and consumer group of the run's own.
type env struct {
	binary, dir, config, policies, log string
	brokers                            []string
	topic, group                       string
	k                                  *benchkit.Kafka
}

// newEnv creates the folder, the topic and the two files, checked with the alarm's own
// loaders so that a mistake here is reported before any process starts.
func newEnv(ctx context.Context, o Options, webhook string) (*env, error) {
	dir, err := os.MkdirTemp("", "binlake-bench-alarm-")
	if err != nil {
		return nil, fmt.Errorf("bench alarm: %w", err)
	}
	// Names of the run's own, so that parallel runs never read each other's points.
	id := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	e := &env{binary: o.Binary, dir: dir, config: filepath.Join(dir, "alarm.yaml"), policies: filepath.Join(dir, "policies.yaml"),
		log: filepath.Join(dir, "alarm.log"), brokers: o.Brokers, topic: o.Prefix + "-" + id, group: o.Prefix + "-" + id,
		k: benchkit.NewKafka(o.Brokers)}
	if err := e.writeFiles(o, webhook); err != nil {
		e.k.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	if err := benchkit.CreateTopic(ctx, o.Brokers, e.topic, o.Partitions, o.Logger); err != nil {
		e.k.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	fmt.Fprintf(o.Out, "bench alarm: config %s, policies %s, log %s; topic %s (%d partitions), group %s\n",
		e.config, e.policies, e.log, e.topic, o.Partitions, e.group)
	return e, nil
}

func (e *env) writeFiles(o Options, webhook string) error {
	cfg, err := yaml.Marshal(map[string]any{
		"log":  map[string]any{"level": "info", "format": "text"},
		"http": map[string]any{"listen": "127.0.0.1:0"},
		// oldest: the group reads the topic from its start, so nothing produced before it
		// joined is missed (the topic is the run's own).
		"bus": map[string]any{"kind": alarm.BusKafka, "brokers": o.Brokers, "topic": e.topic, "partitions": o.Partitions,
			"group": e.group, "start": "oldest"},
		"coordinator": map[string]any{"kind": alarm.CoordSingle, "path": filepath.Join(e.dir, "coord.json")},
		"channels":    map[string]any{channel: map[string]any{"kind": "webhook", "url": webhook}},
	})
	if err != nil {
		return fmt.Errorf("bench alarm: alarm config: %w", err)
	}
	pols, err := yaml.Marshal(map[string]any{"policies": policySpecs(o.Policies)})
	if err != nil {
		return fmt.Errorf("bench alarm: policies: %w", err)
	}
	if err := os.WriteFile(e.config, cfg, 0o600); err != nil {
		return fmt.Errorf("bench alarm: %w", err)
	}
	if err := os.WriteFile(e.policies, pols, 0o600); err != nil {
		return fmt.Errorf("bench alarm: %w", err)
	}
	if _, err := alarm.Load(e.config); err != nil {
		return fmt.Errorf("bench alarm: generated %s: %w", e.config, err)
	}
	if _, err := policy.Load(e.policies); err != nil {
		return fmt.Errorf("bench alarm: generated %s: %w", e.policies, err)
	}
	return nil
}

// close deletes what the run created unless keep: the topic, the group (the alarm has
// left it) and the folder.
func (e *env) close(keep bool, out io.Writer) error {
	defer e.k.Close()
	if keep {
		fmt.Fprintf(out, "kept %s, topic %s and group %s\n", e.dir, e.topic, e.group)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := errors.Join(e.k.DeleteTopic(ctx, e.topic), e.k.DeleteGroup(ctx, e.group))
	os.RemoveAll(e.dir)
	if err != nil {
		return fmt.Errorf("bench alarm: clean-up: %w", err)
	}
	return nil
}
