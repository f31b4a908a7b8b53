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

func TestRegistry(t *testing.T) {
	Register("zz-test-b", factory())
	Register("zz-test-a", factory())
	f, err := Lookup("zz-test-a")
	require.NoError(t, err)
	c, err := f.New(f.Config(), Env{})
	require.NoError(t, err)
	require.Equal(t, "nop", c.Name())

	_, err = Lookup("gpu")
	require.EqualError(t, err, `unknown collector "gpu" (known: zz-test-a, zz-test-b)`)

	require.PanicsWithValue(t, `collector.Register: collector "zz-test-a" registered twice`, func() {
		Register("zz-test-a", factory())
	})
	require.Panics(t, func() { Register("", factory()) })
	require.Panics(t, func() { Register("x", Factory{}) })
}
