package bench

import (
	"fmt"
	"io"
	"time"
)

// report prints the figures of a run.
func report(out io.Writer, r *Result) {
	fmt.Fprintf(out, "\nalarm over Kafka: %d nodes, %d policies, topic %s (%d partitions), batches of %d points\n",
		r.Nodes, r.Policies, r.Topic, r.Partitions, r.Batch)
	fmt.Fprintf(out, "offered: %d points in %s: %.0f points/s (target %d); %d points acknowledged by the broker, %d failed\n",
		r.LoadPoints, r.Load.Round(time.Millisecond), r.OfferedPerS(), r.Target, r.Produced, r.ProduceErrors)
	fmt.Fprintf(out, "evaluated by the alarm: %d points (%d condition evaluations, %d undecodable batches)\n",
		r.Evaluated, r.Evaluations, r.DecodeErrors)
	fmt.Fprintf(out, "sustained: %.0f points/s during the load; all evaluated %s after the first send: %.0f points/s\n",
		r.SustainedPerS(), r.AllEvaluated.Round(time.Millisecond), r.OverallPerS())
	fmt.Fprintf(out, "consumer lag: %d messages when the load stopped, %d at the end (%s after all were evaluated)\n",
		r.LagAtLoadEnd, r.LagEnd, r.LagSettled.Round(time.Millisecond))
	if r.Violations == 0 {
		fmt.Fprintln(out, "violations: none injected")
	} else {
		l := r.Latency
		fmt.Fprintf(out, "violations: %d/%d arrived (%d sent); violation → webhook p50 %s, p99 %s, max %s\n",
			r.Arrived, r.Violations, r.Sent, ms(l.P50), ms(l.P99), ms(l.Max))
	}
	fmt.Fprintf(out, "webhook: %d requests, %d firing alerts\n", r.WebhookRequests, r.WebhookAlerts)
	w := r.Window.Seconds()
	broker := "n/a (" + r.BrokerNote + ")"
	if r.BrokerCPU >= 0 {
		broker = fmt.Sprintf("%s (pid %d)", cores(r.BrokerCPU, w), r.BrokerPID)
	}
	alarm := "n/a (no /proc)"
	if r.AlarmCPU >= 0 {
		alarm = cores(r.AlarmCPU, w)
	}
	fmt.Fprintf(out, "CPU in %.2f s: alarm %s, bench %s, Kafka broker %s\n", w, alarm, cores(r.BenchCPU, w), broker)
}

func cores(d time.Duration, window float64) string {
	return fmt.Sprintf("%.2f s (%.2f cores)", d.Seconds(), d.Seconds()/window)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
