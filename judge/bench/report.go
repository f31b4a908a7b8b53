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

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", msOf(d)) }

// msOf is d in milliseconds, to the microsecond.
func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

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

// Report is a run's figures as `binlake bench judge -json` writes them: rates per
// second, times in milliseconds or seconds as named, CPU in cores over the measured
// window (judge_cpu_cores null where /proc/<pid>/stat cannot be read).
type Report struct {
	Mode          string           `json:"mode"`
	Placement     *PlacementReport `json:"placement,omitempty"`
	Ingest        *IngestReport    `json:"ingest,omitempty"`
	WindowS       float64          `json:"window_s"`
	JudgeCPUCores *float64         `json:"judge_cpu_cores"`
	BenchCPUCores float64          `json:"bench_cpu_cores"`
}

// PlacementReport is the placement mode's figures.
type PlacementReport struct {
	Algorithm        string             `json:"algorithm"`
	Nodes            int                `json:"nodes"`
	Clients          int                `json:"clients"`
	Answers          int64              `json:"answers"`
	ElapsedS         float64            `json:"elapsed_s"`
	ReqPerS          float64            `json:"req_per_s"`
	LatencyMS        map[string]float64 `json:"latency_ms"` // p50, p90, p99, p99.9, max, mean
	BytesPerAnswer   float64            `json:"bytes_per_answer"`
	Errors           map[string]int64   `json:"errors"` // by HTTP status, "transport" or "200 without node"
	IngestTarget     int                `json:"ingest_target_points_per_s"`
	IngestPointsPerS float64            `json:"ingest_points_per_s"`
	IngestErrors     int64              `json:"ingest_errors"`
}

// IngestReport is the ingest mode's figures.
type IngestReport struct {
	Store       string  `json:"store"`
	Via         string  `json:"via"`
	Nodes       int     `json:"nodes"`
	Senders     int     `json:"senders"`
	Batch       int     `json:"batch"`
	Points      int64   `json:"points"`
	ElapsedS    float64 `json:"elapsed_s"`
	PointsPerS  float64 `json:"points_per_s"`
	Prefilled   bool    `json:"prefilled"` // through Kafka: produced before the judge started, in sending_s
	SendingS    float64 `json:"sending_s"`
	Stored      int64   `json:"stored"` // counted in the engine after the run
	WriteErrors int64   `json:"write_errors"`
	Dropped     int64   `json:"dropped"`
}

// Report is r as `bench judge -json` writes it.
func (r *Result) Report() Report {
	w := r.Window.Seconds()
	out := Report{WindowS: w}
	if w > 0 {
		out.BenchCPUCores = r.BenchCPU.Seconds() / w
		if r.JudgeCPU >= 0 {
			c := r.JudgeCPU.Seconds() / w
			out.JudgeCPUCores = &c
		}
	}
	if p := r.Placement; p != nil {
		l := p.Latency
		out.Mode = ModePlacement
		out.Placement = &PlacementReport{
			Algorithm: p.Algorithm, Nodes: p.Nodes, Clients: p.Clients, Answers: p.Answers,
			ElapsedS: p.Elapsed.Seconds(), ReqPerS: p.ReqPerS(), BytesPerAnswer: p.BytesPerAnswer(),
			LatencyMS: map[string]float64{"p50": msOf(l.P50), "p90": msOf(l.P90), "p99": msOf(l.P99),
				"p99.9": msOf(l.P999), "max": msOf(l.Max), "mean": msOf(l.Mean)},
			Errors:       maps.Clone(p.Errors),
			IngestTarget: p.Ingest.Target, IngestPointsPerS: p.Ingest.PointsPerS(), IngestErrors: p.Ingest.Errors,
		}
		if out.Placement.Errors == nil {
			out.Placement.Errors = map[string]int64{}
		}
	}
	if i := r.Ingest; i != nil {
		out.Mode = ModeIngest
		out.Ingest = &IngestReport{
			Store: i.Store, Via: i.Via, Nodes: i.Nodes, Senders: i.Senders, Batch: i.Batch, Points: i.Points,
			ElapsedS: i.Elapsed.Seconds(), PointsPerS: i.PointsPerS(), Prefilled: i.Prefilled,
			SendingS: i.Sending.Seconds(), Stored: i.Stored, WriteErrors: i.WriteErrors, Dropped: i.Dropped,
		}
	}
	return out
}
