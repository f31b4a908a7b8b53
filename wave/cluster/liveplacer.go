package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/binlake/binlake/internal/coord"
)

// LivePlacer places with Placer among the live waves only. A judge places by what the
// agents report, and an agent keeps reporting a host whose wave process is down: a wave
// it answers that is not a member of the waves group is excluded and it is asked again,
// so an instance is never assigned where nothing runs it.
type LivePlacer struct {
	Coord  coord.Coordinator
	Placer Placer
}

// Place implements Placer.
func (l LivePlacer) Place(ctx context.Context, instance string, exclude []string) (string, error) {
	live, err := LiveWaves(ctx, l.Coord)
	if err != nil {
		return "", err
	}
	exclude = slices.Clone(exclude)
	var notLive []string
	// Each answer that is not live is excluded, so this ends within as many asks as the
	// placer has waves to answer; bounded as well, for a placer that keeps finding new
	// ones.
	for range len(live) + 8 {
		if !slices.ContainsFunc(live, func(w string) bool { return !slices.Contains(exclude, w) }) {
			break
		}
		node, err := l.Placer.Place(ctx, instance, exclude)
		if err != nil {
			return "", err
		}
		if slices.Contains(live, node) {
			return node, nil
		}
		if slices.Contains(exclude, node) {
			break // the placer ignores exclude: asking again would answer the same
		}
		notLive = append(notLive, node)
		exclude = append(exclude, node)
	}
	if len(notLive) == 0 {
		return "", ErrNoWave
	}
	names := "none"
	if len(live) > 0 {
		names = strings.Join(live, ", ")
	}
	return "", fmt.Errorf("placement answered %s: %w (live waves: %s)", strings.Join(notLive, ", "), ErrNotLive, names)
}
