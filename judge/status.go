package judge

import (
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// statusPage is the built-in status page: plain HTML with inline style, no scripts or
// external assets, refreshed by the browser every 10 s.
var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"f1": func(m map[string]float64, k string) string {
		v, ok := m[k]
		if !ok {
			return "–"
		}
		return formatFloat(v)
	},
	"age": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return now.Sub(t).Round(time.Second).String() + " ago"
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="10">
<title>BinLake judge</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:2em}
th,td{border:1px solid #ccc;padding:.3em .7em;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
#placements td,#placements th{text-align:left}
.live{color:#070}.stale{color:#b00}.err{color:#b00}
small{color:#666}
</style></head><body>
<h1>BinLake judge</h1>
<p><small>version {{.Version}} · default algorithm <b>{{.Algorithm}}</b> · hour {{.Hour.Format "15:04"}} UTC · historical analysis {{if .HistAsOf.IsZero}}not computed yet{{else}}as of {{age .Now .HistAsOf}}{{end}}</small></p>
<p id="store"><small>store: {{.Store.Buffered}} points buffered · {{.Store.Written}} written · {{if .Store.Dropped}}<span class="err">{{.Store.Dropped}} dropped</span>{{else}}0 dropped{{end}} · {{.Store.Errors}} failed writes</small></p>
<h2>Nodes ({{len .Nodes}})</h2>
{{if .Nodes}}<table id="nodes">
<tr><th>node</th><th>state</th><th>last batch</th><th>cpu %</th><th>mem %</th><th>load.1</th><th>net bytes/s</th><th>wave TPS</th><th>instances</th></tr>
{{range .Nodes}}<tr><td>{{.Node}}</td><td class="{{if .Live}}live">live{{else}}stale">stale{{end}}</td><td>{{age $.Now .LastSeen}}</td>
<td>{{f1 .Load $.M.CPU}}</td><td>{{f1 .Load $.M.Mem}}</td><td>{{f1 .Load $.M.Load1}}</td><td>{{f1 .Load $.M.Rx}} / {{f1 .Load $.M.Tx}}</td><td>{{f1 .Load $.M.TPS}}</td><td>{{f1 .Load $.M.Instances}}</td></tr>
{{end}}</table>{{else}}<p>No node has reported yet.</p>{{end}}
<h2>Last placements</h2>
{{if .Recent}}<table id="placements">
<tr><th>when</th><th>instance</th><th>algorithm</th><th>node</th></tr>
{{range .Recent}}<tr><td>{{.At.UTC.Format "15:04:05"}}</td><td>{{.Instance}}</td><td>{{.Algorithm}}</td><td>{{if .Error}}<span class="err">{{.Error}}</span>{{else}}{{.Node}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>No placement asked yet.</p>{{end}}
<p><small>API: <a href="/v1/nodes">/v1/nodes</a> · <a href="/v1/plugins">/v1/plugins</a> · <a href="/openapi.json">/openapi.json</a> · <a href="/metrics">/metrics</a></small></p>
</body></html>
`))

func formatFloat(v float64) string {
	switch {
	case v >= 1e9:
		return trim(v/1e9) + "G"
	case v >= 1e6:
		return trim(v/1e6) + "M"
	case v >= 1e4:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// statusMetrics are the canonical names of the status page's load columns.
var statusMetrics = struct{ CPU, Mem, Load1, Rx, Tx, TPS, Instances string }{
	metric.CPUUtil, metric.MemUsedPct, metric.Load1, metric.NetRxBps, metric.NetTxBps, metric.WaveTPS, metric.WaveInstances}

func (j *Judge) handleStatus(w http.ResponseWriter, r *http.Request) {
	data := struct {
		M                   any // statusMetrics
		Version, Algorithm  string
		Now, Hour, HistAsOf time.Time
		Nodes               []nodeSummary
		Recent              []Placement
		Store               store.BufferCounters
	}{M: statusMetrics, Version: buildinfo.String(), Algorithm: j.o.Algorithm, Now: j.now(), Hour: j.inc.Hour(), Nodes: j.summaries(), Recent: j.Recent(),
		Store: j.buf.Counters()}
	if s := j.hist.Snapshot(); s != nil {
		data.HistAsOf = s.AsOf
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusPage.Execute(w, data); err != nil {
		j.log.Error("status page", "err", err)
	}
}
