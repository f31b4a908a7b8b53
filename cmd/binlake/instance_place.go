//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/client"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// judgePlacer places instances where the judge answers (its client sends the token),
// with the new instance's expected work when `instance add` measured it, and keeps the
// answer so that the command can say how the wave was chosen.
type judgePlacer struct {
	c        *client.Client
	expected *api.WorkHint
	answer   *api.PlacementAnswer
}

func (p *judgePlacer) Place(ctx context.Context, instance string, exclude []string) (string, error) {
	ans, err := p.c.Place(ctx, api.PlacementRequest{Instance: instance, Exclude: exclude, Expected: p.expected})
	if err != nil {
		return "", fmt.Errorf("%w (-node NAME places it on a wave of your choice without the judge)", err)
	}
	p.answer = ans
	return ans.Node, nil
}

// measureSource measures the new instance's source's binlog growth for the judge's
// placement, and says on out what it measured or why it could not: the measure is a
// hint, and placement goes on without it.
func measureSource(ctx context.Context, src cluster.Source, over time.Duration, out io.Writer) *api.WorkHint {
	password, err := wave.SourcePassword(src)
	if err == nil {
		var r capture.BinlogRate
		if r, err = capture.MeasureBinlogRate(ctx, src, string(password), over); err == nil {
			fmt.Fprintf(out, "source binlog of %s: %s/s over %.1f s (SHOW BINARY LOGS), sent to the judge as the binlog the instance will read and, its filters unknown, as its bytes/s published\n",
				src.Addr, humanBytes(r.BytesPerS), r.Over.Seconds())
			published, read := r.BytesPerS, r.BytesPerS
			return &api.WorkHint{BytesPerS: &published, BinlogBytesPerS: &read}
		}
	}
	fmt.Fprintf(out, "source binlog of %s not measured (%v): the judge weighs a typical instance instead\n", src.Addr, err)
	return nil
}

// humanBytes writes a byte count in B, KB, MB or GB (powers of 1000, one decimal).
func humanBytes(b float64) string {
	for _, u := range []string{"B", "KB", "MB"} {
		if b < 1000 {
			return fmt.Sprintf("%.1f %s", b, u)
		}
		b /= 1000
	}
	return fmt.Sprintf("%.1f GB", b)
}

// describePlacement says how the judge chose the wave: the algorithm, and with the
// utilisation algorithm the wave's predicted peak utilisation before and after the
// instance and what it costs there; with another, its score.
func describePlacement(ans *api.PlacementAnswer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chosen by the judge's %s algorithm among %d candidate%s", ans.Algorithm, ans.Candidates, map[bool]string{true: "s"}[ans.Candidates != 1])
	var s *api.Score
	for i := range ans.Scores {
		if ans.Scores[i].Node == ans.Node {
			s = &ans.Scores[i]
		}
	}
	after, isUtil := map[string]float64(nil), false
	if s != nil {
		after = s.Parts
		_, isUtil = after["peak_after"]
	}
	switch {
	case isUtil:
		fmt.Fprintf(&b, ": %s's predicted peak utilisation %.1f %% → %.1f %% of its %g cores with the instance (%.3f cores)",
			ans.Node, 100*after["peak_before"], 100*after["peak_after"], after["cores"], after["cost_cores"])
	case s != nil:
		fmt.Fprintf(&b, " (score %.2f)", s.Score)
	}
	if e := ans.Expected; e != nil {
		fmt.Fprintf(&b, "; expected work %.0f rows/s, %s/s", e.RowsPerS, humanBytes(e.BytesPerS))
		if e.BinlogBytesPerS > 0 {
			fmt.Fprintf(&b, ", reading %s/s of binlog", humanBytes(e.BinlogBytesPerS))
		}
		fmt.Fprintf(&b, " (%s", e.Source)
		if e.Note != "" {
			fmt.Fprintf(&b, ": %s", e.Note)
		}
		b.WriteString(")")
	}
	if ans.Note != "" && !isUtil {
		fmt.Fprintf(&b, "; %s", ans.Note)
	}
	return b.String()
}
