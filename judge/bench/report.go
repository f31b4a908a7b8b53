package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// reportPlacement prints the placement figures.
func reportPlacement(out io.Writer, r *Result) {
	p := r.Placement
	l := p.Latency
	fmt.Fprintf(out, "\nplacement (%s, %d live nodes, %d clients): %d answers in %s: %.0f req/s\n",
		p.Algorithm, p.Nodes, p.Clients, p.Answers, p.Elapsed.Round(time.Millisecond), p.ReqPerS())
	fmt.Fprintf(out, "latency: p50 %s, p90 %s, p99 %s, p99.9 %s, max %s (mean %s)\n",
		ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max), ms(l.Mean))
	fmt.Fprintf(out, "answer: %.0f bytes mean, %.1f MB/s\n", p.BytesPerAnswer(), float64(p.AnswerBytes)/1e6/p.Elapsed.Seconds())
	if len(p.Errors) == 0 {
		fmt.Fprintln(out, "errors: none")
	} else {
		fmt.Fprint(out, "errors:")
		for _, k := range slices.Sorted(maps.Keys(p.Errors)) {
			fmt.Fprintf(out, " %s: %d", k, p.Errors[k])
		}
		fmt.Fprintln(out)
	}
	i := p.Ingest
	fmt.Fprintf(out, "ingest meanwhile: %.0f points/s (target %d; %d points in %d batches, %d errors)\n",
		i.PointsPerS(), i.Target, i.Points, i.Batches, i.Errors)
	reportCPU(out, r)
}

// reportCPU prints the CPU both processes used in the measured window.
func reportCPU(out io.Writer, r *Result) {
	w := r.Window.Seconds()
	judge := "n/a (no /proc)"
	if r.JudgeCPU >= 0 {
		judge = fmt.Sprintf("%.2f s (%.2f cores)", r.JudgeCPU.Seconds(), r.JudgeCPU.Seconds()/w)
	}
	fmt.Fprintf(out, "CPU in %.2f s: judge %s, load generator %.2f s (%.2f cores)\n", w, judge, r.BenchCPU.Seconds(), r.BenchCPU.Seconds()/w)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// reportIngest prints the ingest figures.
func reportIngest(out io.Writer, r *Result) {
	i := r.Ingest
	fmt.Fprintf(out, "\ningest %s into %s: %d points from %d nodes, batches of %d, %d senders\n", i.Via, i.Store, i.Points, i.Nodes, i.Batch, i.Senders)
	from, sending := "the first send", "sending took"
	if i.Prefilled {
		from, sending = "the judge started serving", "produced beforehand in"
	}
	fmt.Fprintf(out, "all points written %s after %s: %.0f points/s (%s %s; %d write errors, %d dropped)\n",
		i.Elapsed.Round(time.Millisecond), from, i.PointsPerS(), sending, i.Sending.Round(time.Millisecond), i.WriteErrors, i.Dropped)
	fmt.Fprintf(out, "the store holds %d points (counted in the engine)\n", i.Stored)
	reportCPU(out, r)
}
