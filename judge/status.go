package judge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	alarmapi "github.com/binlake/binlake/alarm/api"
	"github.com/binlake/binlake/internal/buildinfo"
	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/analysis"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/judge/store"
)

// The status page: the judge's own figures (nodes, placements, store), the alarm's firing
// alerts and the state of every wave instance, in plain HTML with inline style, no
// scripts or external assets. The browser reloads it every ingest interval (the shortest
// interval the nodes declare, 10 s before any reports), so a figure is never older on
// screen than in the judge.
//
// Where the alerts and the instance states come from, in both shapes:
//
//   - Instance states: from the wave.instance_running{instance,state,reason} points the
//     agents send (agent/collector/wave), which the judge ingests like any other: the
//     last batch of a node that carries wave.* points says which instances its wave
//     leads, in what state, and the class of the error (wave.Reason); once the node's
//     batches have gone without them for analysis.StoppedAfter intervals, or the wave is
//     down (waveStatusOf: its metrics or its node's batches stopped), the page shows
//     those states as not reported, with what the wave last said. This works in the
//     distributed shape as in `binlake up`. The full error text is only in the wave's
//     own /status; StatusOptions.Instances adds it where the judge can read it (in `binlake
//     up`, the wave in the same process).
//   - Firing alerts: the alarm is another role, so StatusOptions.Alerts reads them: from
//     the alarm's GET /v1/alerts?state=firing (AlarmAlerts, for a judge on its own), or
//     from the alarm in the same process (`binlake up`).

// StatusOptions are what the status page shows beside the judge's own figures.
type StatusOptions struct {
	// Alerts lists the alarm's firing alerts; AlarmAlerts builds one that reads an
	// alarm's API. Nil: the page says that no alarm is connected.
	Alerts func(ctx context.Context) ([]alarmapi.Alert, error)
	// AlarmURL, when set, is the alarm's base URL, linked from the page.
	AlarmURL string
	// Instances, when set, lists instances as a wave knows them, with their full error
	// (a wave's /status). For a node it lists any instance of, it replaces what the
	// node's agent reported.
	Instances func(ctx context.Context) ([]InstanceState, error)
}

// InstanceState is one capture instance's state on one wave.
type InstanceState struct {
	Node     string
	Instance string
	// State is the wave's (wave.StateRunning, "reconnecting", "retrying", "error", ...).
	State string
	// Reason is the class of the error (wave.Reason: "binlog_purged", "access_denied", ...);
	// Error its text, when known. Both empty while the instance runs.
	Reason, Error string
	// Since is when the instance entered State, when known; AsOf when the state was
	// reported.
	Since, AsOf time.Time
	// Stopped is set by the status page for a state its node's batches no longer carry
	// (analysis.StoppedAfter: the wave stopped reporting), or whose wave is down
	// (waveStatusOf): what the wave last said, not what it does now.
	Stopped bool
	// NodeStale is set with Stopped when the node's batches stopped altogether
	// (api.WaveDownNodeStale), not only its wave's among them: the page says which
	// stopped reporting, as the node's row does.
	NodeStale bool
}

// Running reports whether the instance captures: its wave says so and has not stopped
// reporting.
func (s InstanceState) Running() bool { return s.State == stateRunning && !s.Stopped }

// stateRunning is wave.StateRunning (the judge does not import the wave).
const stateRunning = "running"

// Status page limits: the page fetches from the alarm and the wave within
// statusFetchTimeout, and lists at most maxStatusRows alerts and instances.
const (
	statusFetchTimeout = 2 * time.Second
	maxStatusRows      = 200
	maxAlertsBody      = 16 << 20
	// defaultRefresh is the page's reload period before any node reports an interval
	// (the agent's default interval); the refresh stays within [1 s, 60 s].
	defaultRefresh = 10 * time.Second
	minRefresh     = time.Second
	maxRefresh     = time.Minute
)

// AlarmAlerts reads the firing alerts from the alarm API at baseURL
// (GET /v1/alerts?state=firing) with client (http.DefaultClient when nil).
func AlarmAlerts(baseURL string, client *http.Client) func(context.Context) ([]alarmapi.Alert, error) {
	if client == nil {
		client = http.DefaultClient
	}
	u := strings.TrimRight(baseURL, "/") + "/v1/alerts?state=" + alarmapi.StateFiring
	return func(ctx context.Context) ([]alarmapi.Alert, error) {
		a, err := httpapi.Call(ctx, client, httpapi.Request{Method: http.MethodGet, URL: u, Limit: maxAlertsBody})
		if err != nil {
			return nil, err // a *url.Error names the method and the URL
		}
		if a.Status != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s: %s", u, a.StatusText, clip(strings.TrimSpace(string(a.Body)), 200))
		}
		if a.Truncated {
			return nil, fmt.Errorf("GET %s: answer larger than %d MiB", u, maxAlertsBody>>20)
		}
		body := a.Body
		var out struct {
			Alerts []alarmapi.Alert `json:"alerts"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, fmt.Errorf("GET %s: not the alarm's alert list: %w", u, err)
		}
		return out.Alerts, nil
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// instanceStates keeps, per node, the instance states of the last batch that described
// the node's wave (carried wave.* points). Ingest updates it; the status page reads it.
type instanceStates struct {
	mu    sync.Mutex
	nodes map[string]nodeInstances
}

type nodeInstances struct {
	at     time.Time
	states []InstanceState
}

// observe records the states in b, taken at ts. A batch without wave.* points (a host
// without a wave, or a failed scrape of the wave) leaves the node's states as they were;
// an older batch than the last recorded (a replay) is ignored.
func (s *instanceStates) observe(b metric.Batch, ts time.Time) {
	var states []InstanceState
	wave := false
	for i := range b.Points {
		p := &b.Points[i]
		if !strings.HasPrefix(p.Name, "wave.") {
			continue
		}
		wave = true
		if p.Name != metric.WaveInstanceRunning || p.Labels[labelInstance] == "" {
			continue
		}
		st := InstanceState{Node: b.Node, Instance: p.Labels[labelInstance], State: p.Labels["state"], Reason: p.Labels["reason"], AsOf: ts}
		if st.State == "" { // an agent or wave that sends no state label
			st.State = "not running"
			if p.Value == 1 {
				st.State = stateRunning
			}
		}
		states = append(states, st)
	}
	if !wave {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes == nil {
		s.nodes = map[string]nodeInstances{}
	}
	if cur, ok := s.nodes[b.Node]; ok && ts.Before(cur.at) {
		return
	}
	s.nodes[b.Node] = nodeInstances{at: ts, states: states}
}

// stateReplay gathers, per node, the wave.* points of the node's latest stored batch
// that carried any (the points of one batch share its timestamp), as the rebuild scans
// the stored points in time order: what observe would have recorded from the live
// batches, so that a restarted judge's status page lists its nodes' instances as it did
// before (with their age) instead of none until each node's next batch.
type stateReplay map[string]*replayedBatch

type replayedBatch struct {
	ts     time.Time
	points []metric.Point
}

// add takes a chunk of stored points, in time order.
func (r stateReplay) add(chunk []store.Point) {
	for i := range chunk {
		p := &chunk[i]
		if !strings.HasPrefix(p.Name, "wave.") {
			continue
		}
		b := r[p.Node]
		switch {
		case b == nil:
			b = &replayedBatch{ts: p.TS}
			r[p.Node] = b
		case p.TS.After(b.ts):
			b.ts, b.points = p.TS, b.points[:0]
		case p.TS.Before(b.ts):
			continue
		}
		b.points = append(b.points, metric.Point{Name: p.Name, Value: p.Value, Labels: p.Labels})
	}
}

// observe records the gathered batches' states in s.
func (r stateReplay) observe(s *instanceStates) {
	for node, b := range r {
		s.observe(metric.Batch{Node: node, TS: b.ts, Points: b.points}, b.ts)
	}
}

// list returns the states of the nodes in known (the judge's nodes; others are
// forgotten), sorted by node and instance.
func (s *instanceStates) list(known []string) []InstanceState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InstanceState
	for node, ni := range s.nodes {
		if !slices.Contains(known, node) {
			delete(s.nodes, node)
			continue
		}
		out = append(out, ni.states...)
	}
	sortStates(out)
	return out
}

func sortStates(s []InstanceState) {
	slices.SortFunc(s, func(a, b InstanceState) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Instance, b.Instance))
	})
}

// mergeStates puts detail's states in place of the reported ones of the nodes detail
// covers.
func mergeStates(reported, detail []InstanceState) []InstanceState {
	if len(detail) == 0 {
		return reported
	}
	covered := map[string]bool{}
	for _, d := range detail {
		covered[d.Node] = true
	}
	out := slices.DeleteFunc(slices.Clone(reported), func(s InstanceState) bool { return covered[s.Node] })
	out = append(out, detail...)
	sortStates(out)
	return out
}

// dropClaimed drops the rows of a wave that stopped reporting whose instance another
// wave reports now: the failover took it, as GET /v1/nodes/{id} and the plan have it
// (the page listed such an instance twice, on its old wave and its new one).
func dropClaimed(states []InstanceState) []InstanceState {
	current := map[string]bool{}
	for _, s := range states {
		if !s.Stopped {
			current[s.Instance] = true
		}
	}
	return slices.DeleteFunc(states, func(s InstanceState) bool { return s.Stopped && current[s.Instance] })
}

// statusPage is the built-in status page.
var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"f1": func(n statusNode, k string) string {
		v, ok := n.Load[k]
		switch {
		case n.Stopped[k]:
			return "stopped"
		case !ok:
			return "–"
		}
		return formatFloat(v)
	},
	"count": func(n statusNode, k string) string {
		v, ok := n.Last[k]
		switch {
		case n.Stopped[k]:
			return "stopped"
		case !ok:
			return "–"
		}
		return formatCount(v)
	},
	"age": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return now.Sub(t).Round(time.Second).String() + " ago"
	},
	"agep": func(now time.Time, t *time.Time) string {
		if t == nil || t.IsZero() {
			return "–"
		}
		return now.Sub(*t).Round(time.Second).String() + " ago"
	},
	"num": formatFloat,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{{.RefreshS}}">
<title>BinLake judge</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:2em}
th,td{border:1px solid #ccc;padding:.3em .7em;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
#placements td,#placements th,#alerts td,#alerts th,#instances td,#instances th{text-align:left}
.live{color:#070}.stale{color:#b00}.err{color:#b00}
small{color:#666}
</style></head><body>
<h1>BinLake judge</h1>
<p><small>version {{.Version}} · default algorithm <b>{{.Algorithm}}</b> · hour {{.Hour.Format "15:04"}} UTC · historical analysis {{if .HistAsOf.IsZero}}not computed yet{{else}}as of {{age .Now .HistAsOf}}{{end}} · reloads every {{.RefreshS}} s (the ingest interval)</small></p>
<p id="store"><small>store: {{.Store.Buffered}} points buffered · {{.Store.Written}} written · {{if .Store.Dropped}}<span class="err">{{.Store.Dropped}} dropped{{if .Store.Refused}} ({{.Store.Refused}} refused by the store){{end}}</span>{{else}}0 dropped{{end}} · {{.Store.Errors}} failed writes</small></p>
<h2>Firing alerts{{if not .AlertsErr}} ({{len .Alerts}}){{end}}</h2>
{{if not .AlertsOn}}<p id="alerts">No alarm is connected to this page.</p>
{{else if .AlertsErr}}<p id="alerts" class="err">The alarm did not answer: {{.AlertsErr}}</p>
{{else if .Alerts}}<table id="alerts">
<tr><th>alert</th><th>severity</th><th>node</th><th>summary</th><th>value</th><th>firing since</th><th>notifications</th></tr>
{{range .Alerts}}<tr><td class="err">{{index .Labels "alertname"}}</td><td>{{index .Labels "severity"}}</td><td>{{index .Labels "node"}}</td><td>{{index .Annotations "summary"}}{{if .SilencedBy}} <small>(silenced)</small>{{end}}{{if .Inhibited}} <small>(inhibited)</small>{{end}}</td><td>{{num .Value}}</td><td>{{agep $.Now .FiringSince}}</td><td>{{.Notifications}}</td></tr>
{{end}}</table>{{if .AlertsMore}}<p><small>and {{.AlertsMore}} more</small></p>{{end}}
{{else}}<p id="alerts">No alert is firing.</p>{{end}}
<h2>Wave instances ({{len .Instances}})</h2>
{{if .InstancesErr}}<p class="err">The wave did not answer: {{.InstancesErr}}</p>{{end}}
{{if .Instances}}<table id="instances">
<tr><th>node</th><th>instance</th><th>state</th><th>reason</th><th>error</th><th>since</th><th>reported</th></tr>
{{range .Instances}}<tr><td>{{.Node}}</td><td>{{.Instance}}</td>{{if .Stopped}}<td class="stale">not reported</td><td></td><td><small>the {{if .NodeStale}}node{{else}}wave{{end}} stopped reporting; it last said {{.State}}{{with .Reason}} ({{.}}){{end}}</small></td>{{else}}<td class="{{if .Running}}live{{else}}err{{end}}">{{.State}}</td><td>{{.Reason}}</td><td>{{if .Error}}<span class="err">{{.Error}}</span>{{else if .Running}}{{else}}<small>see the wave's /status</small>{{end}}</td>{{end}}<td>{{if .Since.IsZero}}–{{else}}{{age $.Now .Since}}{{end}}</td><td>{{age $.Now .AsOf}}</td></tr>
{{end}}</table>{{if .InstancesMore}}<p><small>and {{.InstancesMore}} more</small></p>{{end}}
{{else}}<p>No wave has reported an instance.</p>{{end}}
<h2>Nodes ({{len .Nodes}})</h2>
{{if .Nodes}}<table id="nodes">
<tr><th>node</th><th>state</th><th>last batch</th><th>cpu %</th><th>mem %</th><th>load.1</th><th>net receive B/s</th><th>net send B/s</th><th>wave TPS</th><th>instances</th></tr>
{{range .Nodes}}<tr><td>{{.Node}}</td>{{if .WaveDown}}<td class="stale">{{if .Live}}wave down{{else}}stale{{end}}<br><small>{{.WaveDown}}: {{.WaveNote}}</small></td>{{else if not .Live}}<td class="stale">stale</td>{{else}}<td class="live">live</td>{{end}}<td>{{age $.Now .LastSeen}}</td>
<td>{{f1 . $.M.CPU}}</td><td>{{f1 . $.M.Mem}}</td><td>{{f1 . $.M.Load1}}</td><td>{{f1 . $.M.Rx}}</td><td>{{f1 . $.M.Tx}}</td><td>{{f1 . $.M.TPS}}</td><td>{{count . $.M.Instances}}</td></tr>
{{end}}</table>{{if .AnyStopped}}<p><small>stopped: the node still reports, but its batches have gone without this figure for {{.StoppedAfter}} of its intervals (its wave stopped reporting, or a collector fails); its last level is not shown</small></p>{{end}}
{{else}}<p>No node has reported yet.</p>{{end}}
<h2>Last placements</h2>
{{if .Recent}}<table id="placements">
<tr><th>when</th><th>instance</th><th>algorithm</th><th>node</th></tr>
{{range .Recent}}<tr><td>{{.At.UTC.Format "15:04:05"}}</td><td>{{.Instance}}</td><td>{{.Algorithm}}</td><td>{{if .Error}}<span class="err">{{.Error}}</span>{{else}}{{.Node}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>No placement asked yet.</p>{{end}}
<p><small>API: <a href="/v1/nodes">/v1/nodes</a> · <a href="/v1/plugins">/v1/plugins</a> · <a href="/openapi.json">/openapi.json</a> · <a href="/metrics">/metrics</a>{{if .AlarmURL}} · alarm: <a href="{{.AlarmURL}}">{{.AlarmURL}}</a>{{end}}</small></p>
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

// formatCount shows a count (instances, ...) as the integer it is.
func formatCount(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
}

// statusMetrics are the canonical names of the status page's load columns.
var statusMetrics = struct{ CPU, Mem, Load1, Rx, Tx, TPS, Instances string }{
	metric.CPUUtil, metric.MemUsedPct, metric.Load1, metric.NetRxBps, metric.NetTxBps, metric.WaveTPS, metric.WaveInstances}

// statusColumn says whether the node table has a column for the series name.
func statusColumn(name string) bool {
	m := statusMetrics
	return slices.Contains([]string{m.CPU, m.Mem, m.Load1, m.Rx, m.Tx, m.TPS, m.Instances}, name)
}

// statusNode is one row of the page's node table: the level (EWMA) of each rate and
// percentage, the last value of each count, and which series stopped (not in Load and
// Last; analysis.StoppedAfter).
type statusNode struct {
	Node string
	Live bool
	// WaveDown and WaveNote say why the node's wave is down (waveStatusOf): its agent
	// reports the host and its wave does not (wave_silent: the row says "wave down"), or
	// the node's batches stopped (node_stale: "stale"). Either way the row says why and
	// since when; a stale wave's said only "stale".
	WaveDown, WaveNote string
	LastSeen           time.Time
	Load, Last         map[string]float64
	Stopped            map[string]bool
}

// refreshEvery is the page's reload period: the shortest interval the nodes report in,
// within [minRefresh, maxRefresh], in whole seconds; defaultRefresh before any does.
func refreshEvery(nodes []analysis.Node) time.Duration {
	var d time.Duration
	for _, n := range nodes {
		if n.Interval > 0 && (d == 0 || n.Interval < d) {
			d = n.Interval
		}
	}
	if d == 0 {
		d = defaultRefresh
	}
	d = min(max(d, minRefresh), maxRefresh)
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d
}

func (j *Judge) handleStatus(w http.ResponseWriter, r *http.Request) {
	now := j.now()
	nodes := j.inc.Nodes()
	data := struct {
		M                   any // statusMetrics
		Version, Algorithm  string
		Now, Hour, HistAsOf time.Time
		RefreshS            int64
		Nodes               []statusNode
		AnyStopped          bool
		StoppedAfter        int
		Recent              []Placement
		Store               store.BufferCounters

		AlertsOn      bool
		Alerts        []alarmapi.Alert
		AlertsErr     string
		AlertsMore    int
		AlarmURL      string
		Instances     []InstanceState
		InstancesErr  string
		InstancesMore int
	}{M: statusMetrics, Version: buildinfo.String(), Algorithm: j.o.Algorithm, Now: now, Hour: j.inc.Hour(), Recent: j.Recent(),
		Store: j.buf.Counters(), RefreshS: int64(refreshEvery(nodes) / time.Second), AlarmURL: j.o.Status.AlarmURL,
		StoppedAfter: analysis.StoppedAfter}
	if s := j.hist.Snapshot(); s != nil {
		data.HistAsOf = s.AsOf
	}
	ids := make([]string, 0, len(nodes))
	byID := make(map[string]analysis.Node, len(nodes))
	downs := map[string]string{} // node → why its wave is down
	for _, n := range nodes {
		ids = append(ids, n.Node)
		byID[n.Node] = n
		sn := statusNode{Node: n.Node, Live: j.live(n.LastSeen, n.Interval, now), LastSeen: n.LastSeen.UTC(),
			Load: map[string]float64{}, Last: map[string]float64{}, Stopped: map[string]bool{}}
		if ws, ok := j.waveStatusOf(n, now); ok {
			sn.WaveDown, sn.WaveNote = ws.Down, ws.DownNote
			if !ws.Live {
				downs[n.Node] = ws.Down
			}
		}
		for _, se := range n.Series {
			switch {
			case len(se.Labels) > 0 || !se.HasLevel():
			case n.Stopped(se):
				// The note under the table explains a cell that says "stopped": only a
				// column's series sets it (a stopped wave.cluster_load, in no column, put
				// the note under a table of numbers: an outside trial).
				sn.Stopped[se.Name] = true
				data.AnyStopped = data.AnyStopped || statusColumn(se.Name)
			default:
				sn.Load[se.Name], sn.Last[se.Name] = se.EWMA, se.Last
			}
		}
		data.Nodes = append(data.Nodes, sn)
	}

	// The alarm and the wave answer within statusFetchTimeout, both at once.
	ctx, cancel := context.WithTimeout(r.Context(), statusFetchTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var detail []InstanceState
	if f := j.o.Status.Alerts; f != nil {
		data.AlertsOn = true
		wg.Go(func() {
			alerts, err := f(ctx)
			if err != nil {
				data.AlertsErr = err.Error()
				return
			}
			alerts = slices.DeleteFunc(alerts, func(a alarmapi.Alert) bool { return a.State != alarmapi.StateFiring })
			if len(alerts) > maxStatusRows {
				data.AlertsMore, alerts = len(alerts)-maxStatusRows, alerts[:maxStatusRows]
			}
			data.Alerts = alerts
		})
	}
	if f := j.o.Status.Instances; f != nil {
		wg.Go(func() {
			var err error
			if detail, err = f(ctx); err != nil {
				data.InstancesErr = err.Error()
			}
			for i := range detail {
				if detail[i].AsOf.IsZero() {
					detail[i].AsOf = now
				}
			}
		})
	}
	wg.Wait()
	reported := j.states.list(ids)
	for i := range reported {
		// The node's batches went on without its wave's points, or its wave is down
		// (its node's batches stopped too): the page does not vouch for the last
		// states. A stale node's instances read running as long as the page was up.
		r := &reported[i]
		down, isDown := downs[r.Node]
		r.Stopped = isDown || byID[r.Node].StoppedAt(r.AsOf)
		r.NodeStale = down == api.WaveDownNodeStale
	}
	inst := dropClaimed(mergeStates(reported, detail))
	if len(inst) > maxStatusRows {
		// The ones not running first: they are what the operator looks for.
		slices.SortStableFunc(inst, func(a, b InstanceState) int {
			if a.Running() == b.Running() {
				return 0
			}
			if a.Running() {
				return 1
			}
			return -1
		})
		data.InstancesMore, inst = len(inst)-maxStatusRows, inst[:maxStatusRows]
	}
	data.Instances = inst

	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusPage.Execute(w, data); err != nil {
		j.log.Error("status page", "err", err)
	}
}
