package collector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/internal/metric"
)

type nop struct{}

func (nop) Name() string                                    { return "nop" }
func (nop) Collect(context.Context) ([]metric.Point, error) { return nil, nil }

func factory() Factory {
	return Factory{
		Config: func() any { return &struct{}{} },
		New:    func(any, Env) (Collector, error) { return nop{}, nil },
	}
}

// TestRegistry uses a registry of its own: the process-wide one is filled once by init
// functions, so registering test names there would panic on the second run (-count>1).
func TestRegistry(t *testing.T) {
	r := &registry{factories: map[string]Factory{}}
	r.register("zz-test-b", factory())
	r.register("zz-test-a", factory())
	f, err := r.lookup("zz-test-a")
	require.NoError(t, err)
	c, err := f.New(f.Config(), Env{})
	require.NoError(t, err)
	require.Equal(t, "nop", c.Name())

	_, err = r.lookup("gpu")
	require.EqualError(t, err, `unknown collector "gpu" (known: zz-test-a, zz-test-b)`)

	require.PanicsWithValue(t, `collector.Register: collector "zz-test-a" registered twice`, func() {
		r.register("zz-test-a", factory())
	})
	require.Panics(t, func() { r.register("", factory()) })
	require.Panics(t, func() { r.register("x", Factory{}) })
}
