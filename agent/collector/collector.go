// Package collector is the agent's plugin point: a Collector reads one source (the host,
// the local wave's /metrics, a process) and returns points; implementations live in
// subpackages named by what they read and register themselves at init time, the way
// node_exporter's collectors do, so adding one never touches the agent loop.
package collector

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/binlake/binlake/internal/metric"
)

// Collector reads one source once per agent tick.
type Collector interface {
	// Name is the registry name ("host", "wave", "process").
	Name() string
	// Collect returns the points of one tick. It may return points together with an
	// error when only part of the source failed: the agent keeps the points, and counts
	// the error unless it is a *Partial. Collect should return when ctx ends (one that
	// does not is left behind, and not run again until it returns).
	Collect(ctx context.Context) ([]metric.Point, error)
}

// Partial is the error of a collection that failed in a part it can go without (one
// mount of many the agent may not statfs) and returned the rest: the agent logs it, once
// a message, and the collector stays up; counted as the collector failing, one private
// mount made the host look unmeasured while every figure still came (an outside trial).
type Partial struct{ Err error }

func (p *Partial) Error() string { return p.Err.Error() }
func (p *Partial) Unwrap() error { return p.Err }

// Env is what the agent hands every collector it builds.
type Env struct {
	Logger *slog.Logger
}

// Factory builds one kind of collector.
type Factory struct {
	// Config returns a pointer to the collector's config struct, filled with its
	// defaults. The agent decodes the collector's section of agent.yaml into it
	// strictly (config.Plugins: unknown keys are errors at any depth); the section's
	// "enabled" key is the agent's, so the struct must not have one. If the value has
	// a Validate() error method it is called after decoding; an error that begins with
	// a key ("url …: …") is reported at that key's line.
	Config func() any
	// New builds the collector from the decoded config (the value Config returned).
	New func(cfg any, env Env) (Collector, error)
	// Emits are the point names the collector can send, whatever its config (its tests
	// check what it collects against them): what `binlake alarm --check` takes for
	// known names when it warns about a policy's metric.
	Emits []string
}

// registry holds the factories by name. The package keeps one (std) that the collectors'
// init functions fill; a test owns its own value so that running it again (-count>1)
// does not register the same name twice in the process-wide one.
type registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

var std = &registry{factories: map[string]Factory{}}

// Register makes a collector kind available under name. It is meant to be called from
// init; registering the same name twice is a programming error and panics.
func Register(name string, f Factory) { std.register(name, f) }

// Lookup returns the factory registered under name, or an error listing the known names.
func Lookup(name string) (Factory, error) { return std.lookup(name) }

// Names returns the registered names, sorted.
func Names() []string { return std.names() }

// Emitted returns the point names the registered collectors can send (their Emits),
// sorted, each once.
func Emitted() []string { return std.emitted() }

func (r *registry) register(name string, f Factory) {
	if name == "" || f.Config == nil || f.New == nil {
		panic(fmt.Sprintf("collector.Register(%q): name, Config and New are required", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[name]; dup {
		panic(fmt.Sprintf("collector.Register: collector %q registered twice", name))
	}
	r.factories[name] = f
}

func (r *registry) lookup(name string) (Factory, error) {
	r.mu.RLock()
	f, ok := r.factories[name]
	r.mu.RUnlock()
	if !ok {
		return Factory{}, fmt.Errorf("unknown collector %q (known: %s)", name, strings.Join(r.names(), ", "))
	}
	return f, nil
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *registry) emitted() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for _, f := range r.factories {
		for _, n := range f.Emits {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}
