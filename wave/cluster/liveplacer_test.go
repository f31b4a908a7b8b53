package cluster_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/coord"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/internal/wavetest"
)

// scriptedPlacer answers from a script, the last answer again once it runs out, and
// keeps the exclude lists it was given.
type scriptedPlacer struct {
	answers  []string
	excludes [][]string
}

func (s *scriptedPlacer) Place(_ context.Context, _ string, exclude []string) (string, error) {
	s.excludes = append(s.excludes, slices.Clone(exclude))
	a := s.answers[min(len(s.excludes), len(s.answers))-1]
	return a, nil
}

// A placer's answer that is not a live wave (a judge still hearing from the host of a
// stopped wave) is excluded and the placer asked again; only live waves are returned.
func TestLivePlacer(t *testing.T) {
	c := wavetest.Coordinators(t)["single"](t)
	ctx := t.Context()
	for _, node := range []string{"wave-1", "wave-2"} {
		if err := c.Register(ctx, cluster.GroupWaves, coord.Member{ID: node}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		answers  []string
		exclude  []string
		want     string
		calls    int
		wantErr  error
		errNames string
	}{
		{name: "live at once", answers: []string{"wave-2"}, want: "wave-2", calls: 1},
		{name: "a stopped wave first", answers: []string{"wave-9", "wave-1"}, want: "wave-1", calls: 2},
		{name: "only stopped waves", answers: []string{"wave-9", "wave-8"}, wantErr: cluster.ErrNotLive, calls: 3,
			errNames: "placement answered wave-9, wave-8: is not live (live waves: wave-1, wave-2)"},
		{name: "every live wave excluded", answers: []string{"wave-1"}, exclude: []string{"wave-1", "wave-2"}, wantErr: cluster.ErrNoWave},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &scriptedPlacer{answers: tc.answers}
			got, err := cluster.LivePlacer{Coord: c, Placer: p}.Place(ctx, "orders", tc.exclude)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errNames) {
					t.Fatalf("Place = %q, %v; want %v naming %q", got, err, tc.wantErr, tc.errNames)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("Place = %q, %v; want %s", got, err, tc.want)
			}
			if tc.calls > 0 && len(p.excludes) < tc.calls {
				t.Fatalf("%d asks, want %d", len(p.excludes), tc.calls)
			}
			if tc.name == "a stopped wave first" && !slices.Equal(p.excludes[1], []string{"wave-9"}) {
				t.Fatalf("second ask excluded %v, want [wave-9]", p.excludes[1])
			}
		})
	}
}
