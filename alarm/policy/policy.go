// Package policy is the alert policy file of the alarm role (policies.yaml): which metric,
// which nodes, which condition, for how long, how severe, and whom to tell. The file is
// decoded strictly (internal/config): an unknown key, a bad condition or a bad template is
// an error that names the file, the line and the field.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/metric"
)

// Severity is P0 (most severe) to P5.
type Severity int

// String returns "P0"…"P5".
func (s Severity) String() string { return "P" + strconv.Itoa(int(s)) }

// ParseSeverity parses "P0"…"P5" (case-insensitive).
func ParseSeverity(s string) (Severity, error) {
	if len(s) == 2 && (s[0] == 'P' || s[0] == 'p') && s[1] >= '0' && s[1] <= '5' {
		return Severity(s[1] - '0'), nil
	}
	return 0, fmt.Errorf("severity %q: want P0 (most severe) to P5", s)
}

// Reserved alert labels, set by the alarm itself.
const (
	LabelAlertName = "alertname"
	LabelNode      = "node"
	LabelSeverity  = "severity"
	LabelMetric    = "metric"
)

// DefaultRepeatInterval is the repeat interval of a policy that sets none (Alertmanager's).
const DefaultRepeatInterval = 4 * time.Hour

// MinRepeatInterval is the shortest repeat interval a policy may set: "1ns" paged twice
// a second, at every evaluation.
const MinRepeatInterval = 10 * time.Second

// MaxFor is the longest for and keep_firing_for a policy may set: 30 days. "for:
// 1000000h" (114 years) passed, a policy that could never fire.
const MaxFor = 30 * 24 * time.Hour

// File is policies.yaml.
type File struct {
	Policies []Raw `yaml:"policies"`
}

// Raw is one policy as written in the file.
type Raw struct {
	Name   string `yaml:"name"`
	Metric string `yaml:"metric"`
	Nodes  struct {
		Names  []string          `yaml:"names"`
		Regex  string            `yaml:"regex"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"nodes"`
	Condition        string            `yaml:"condition"`
	For              config.Duration   `yaml:"for"`
	KeepFiringFor    config.Duration   `yaml:"keep_firing_for"`
	NoData           int               `yaml:"nodata"`
	Severity         string            `yaml:"severity"`
	Labels           map[string]string `yaml:"labels"`
	Annotations      map[string]string `yaml:"annotations"`
	Channels         []string          `yaml:"channels"`
	RepeatInterval   config.Duration   `yaml:"repeat_interval"`
	MaxNotifications int               `yaml:"max_notifications"`
	GroupWait        *config.Duration  `yaml:"group_wait"`
	GroupInterval    *config.Duration  `yaml:"group_interval"`
	GroupBy          []string          `yaml:"group_by"`
	By               []string          `yaml:"by"`
}

// Policy is one validated, compiled policy.
type Policy struct {
	Name   string
	Metric string // empty only for a nodata-only policy that watches any batch
	// Node selection: Names (a set) or Regex (anchored), or every node when both are empty;
	// then every label in Labels must equal the point's.
	Names  map[string]bool
	Regex  *regexp.Regexp
	Labels map[string]string // point labels to match
	// Cond is nil for a nodata-only policy.
	Cond             *Cond
	For              time.Duration
	KeepFiringFor    time.Duration
	NoData           int // intervals without a batch before the nodata alert fires; 0 = off
	Severity         Severity
	AlertLabels      map[string]string // extra labels of the alert
	Annotations      map[string]*template.Template
	Channels         []string
	RepeatInterval   time.Duration
	MaxNotifications int            // firing notifications per episode; 0 = unlimited
	GroupWait        *time.Duration // nil = the alarm's default
	GroupInterval    *time.Duration // nil = the alarm's default
	// GroupBy are the labels whose values make a notification group (see Group):
	// DefaultGroupBy unless the policy sets group_by; [GroupAll] groups by every label.
	GroupBy []string
	// By are the point labels that tell its alerts apart, as PromQL's `by`: nil, every
	// label of the point. A label left out is no part of the alert: a series that
	// differs from another only in it is the same alert (wave.instance_running's reason
	// changing during one outage continues the alert instead of resolving it and paging
	// again a `for` later), and the annotations read its value off the latest point.
	By   []string
	Line int // where the policy starts in its file, for messages
	// MetricLine is the line of its metric key (Line when it has none).
	MetricLine int
}

// MatchNode reports whether the policy applies to a node.
func (p *Policy) MatchNode(node string) bool {
	if p.Names != nil && !p.Names[node] {
		return false
	}
	if p.Regex != nil && !p.Regex.MatchString(node) {
		return false
	}
	return true
}

// AnyValue as a selected label's value matches every point that carries the label,
// whatever its value: a policy on a labelled series (wave.lag_s{instance}) then leaves
// out the unlabelled summary series of the same metric, which would page a second time
// for the same fault.
const AnyValue = "*"

// A selected label's empty value matches only points without the label, as label=""
// does in PromQL: cpu.util{cpu: ""} is the node's whole CPU, not each core's series that
// an agent with per_cpu sends beside it (which paged once per core as well).

// MatchLabels reports whether a point's labels satisfy the policy's label selection.
func (p *Policy) MatchLabels(l map[string]string) bool {
	for k, v := range p.Labels {
		got, ok := l[k]
		switch {
		case v == "":
			if ok {
				return false
			}
		case !ok || (v != AnyValue && got != v):
			return false
		}
	}
	return true
}

// TemplateData is what annotation templates see: {{ .Node }}, {{ .Value }},
// {{ .Labels.instance }}, {{ .Threshold }}…
type TemplateData struct {
	Policy    string
	Node      string
	Metric    string
	Value     float64
	Threshold float64
	Condition string
	Severity  string
	State     string
	Labels    map[string]string
	// Ended is set on a resolution that no point of the series decided: the series
	// ended (a batch of its node came without it) or went silent (stale). Value is then
	// the series' last point, the one that violated.
	Ended bool
}

// sampleData is what a policy's templates are tried on as the file is loaded: a value of
// every field, a number with a fraction where the alert's would be one.
var sampleData = TemplateData{Policy: "policy", Node: "node", Metric: "metric", Value: 95.5, Threshold: 80.5,
	Condition: "> 80.5", Severity: "warning", State: "firing", Labels: map[string]string{}}

// Render executes the annotation templates. A template that fails at run time (a missing
// map key is not a failure; a bad call is) yields its error text, so an alert is never lost
// to a template.
func (p *Policy) Render(d TemplateData) map[string]string {
	out := make(map[string]string, len(p.Annotations))
	var b bytes.Buffer
	for k, t := range p.Annotations {
		b.Reset()
		if err := t.Execute(&b, d); err != nil {
			out[k] = "template error: " + err.Error()
			continue
		}
		out[k] = b.String()
	}
	return out
}

// fieldError is a problem of one field of a policy, at its path within the policy
// ("condition", "nodes.regex", "labels.node").
type fieldError struct {
	field string
	err   error
}

// compile validates one raw policy, and returns every problem it has (nil policy then):
// an operator fixing a file sees them all at once, not one a run.
func compile(r Raw) (*Policy, []fieldError) {
	var errs []fieldError
	bad := func(field string, err error) { errs = append(errs, fieldError{field, err}) }
	p := &Policy{Name: r.Name, Metric: r.Metric, For: r.For.D(), KeepFiringFor: r.KeepFiringFor.D(),
		NoData: r.NoData, RepeatInterval: r.RepeatInterval.D(), MaxNotifications: r.MaxNotifications}
	if !validIdent(r.Name) {
		bad("name", fmt.Errorf("policy name %q: want 1 to 128 letters, digits, '.', '_' or '-'", r.Name))
	}
	if r.Metric != "" && !metric.ValidName(r.Metric) {
		bad("metric", fmt.Errorf("%q is not a metric name (lowercase, dots, e.g. cpu.util)", r.Metric))
	}
	if len(r.Nodes.Names) > 0 {
		p.Names = make(map[string]bool, len(r.Nodes.Names))
		for _, n := range r.Nodes.Names {
			if n == "" {
				bad("nodes.names", errors.New("empty node name"))
				break
			}
			p.Names[n] = true
		}
	}
	if r.Nodes.Regex != "" {
		if len(r.Nodes.Names) > 0 {
			// Both would have to match; one who lists both may read "or" (the example does).
			bad("nodes.regex", errors.New("give nodes.names or nodes.regex, not both (a node would have to be listed and match)"))
		}
		re, err := regexp.Compile("^(?:" + r.Nodes.Regex + ")$")
		if err != nil {
			bad("nodes.regex", fmt.Errorf("bad regular expression: %v", err))
		}
		p.Regex = re
	}
	for _, k := range slices.Sorted(maps.Keys(r.Nodes.Labels)) {
		if !validLabel(k) {
			bad("nodes.labels."+k, fmt.Errorf("label name %q: want [A-Za-z_][A-Za-z0-9_]*", k))
		}
	}
	p.Labels = r.Nodes.Labels
	if r.Condition != "" {
		if r.Metric == "" {
			bad("metric", errors.New("a condition needs a metric"))
		}
		if c, err := ParseCond(r.Condition); err != nil {
			bad("condition", err)
		} else {
			p.Cond = &c
		}
	}
	if r.NoData < 0 || r.NoData > 10_000 {
		bad("nodata", fmt.Errorf("nodata %d: want 0 (off) to 10000 intervals", r.NoData))
	}
	if r.Condition == "" && r.NoData == 0 {
		bad("condition", errors.New("a policy needs a condition (e.g. \"avg(#3) > 90\") or nodata (intervals)"))
	}
	if r.For < 0 || r.KeepFiringFor < 0 || r.RepeatInterval < 0 {
		f := "for"
		if r.KeepFiringFor < 0 {
			f = "keep_firing_for"
		} else if r.RepeatInterval < 0 {
			f = "repeat_interval"
		}
		bad(f, errors.New("must not be negative"))
	}
	if p.For > MaxFor || p.KeepFiringFor > MaxFor {
		f, d := "for", p.For
		if p.KeepFiringFor > MaxFor {
			f, d = "keep_firing_for", p.KeepFiringFor
		}
		bad(f, fmt.Errorf("%s: want at most %s; a condition held that long is not an alert", d, MaxFor))
	}
	if p.RepeatInterval == 0 {
		p.RepeatInterval = DefaultRepeatInterval
	} else if p.RepeatInterval > 0 && p.RepeatInterval < MinRepeatInterval { // a negative one is refused above
		bad("repeat_interval", fmt.Errorf("%s: want at least %s (0 or none: %s); a page every few seconds is noise", p.RepeatInterval, MinRepeatInterval, DefaultRepeatInterval))
	}
	if r.MaxNotifications < 0 {
		bad("max_notifications", errors.New("must not be negative (0 = unlimited)"))
	}
	if r.GroupWait != nil {
		if *r.GroupWait < 0 {
			bad("group_wait", errors.New("must not be negative"))
		}
		d := r.GroupWait.D()
		p.GroupWait = &d
	}
	if r.GroupInterval != nil {
		if *r.GroupInterval < 0 {
			bad("group_interval", errors.New("must not be negative"))
		}
		d := r.GroupInterval.D()
		p.GroupInterval = &d
	}
	gb, err := compileGroupBy(r.GroupBy)
	if err != nil {
		bad("group_by", err)
	}
	p.GroupBy = gb
	if r.By != nil {
		by, err := compileBy(r.By, r.Condition != "")
		if err != nil {
			bad("by", err)
		}
		p.By = by
	}
	if r.Severity == "" {
		bad("severity", errors.New("missing: want P0 (most severe) to P5"))
	} else if sev, err := ParseSeverity(r.Severity); err != nil {
		bad("severity", err)
	} else {
		p.Severity = sev
	}
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		switch {
		case !validLabel(k):
			bad("labels."+k, fmt.Errorf("label name %q: want [A-Za-z_][A-Za-z0-9_]*", k))
		case k == LabelAlertName || k == LabelNode || k == LabelSeverity || k == LabelMetric:
			bad("labels."+k, fmt.Errorf("label %q is set by the alarm and cannot be overridden", k))
		}
	}
	p.AlertLabels = r.Labels
	p.Annotations = make(map[string]*template.Template, len(r.Annotations))
	for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
		if !validLabel(k) {
			bad("annotations."+k, fmt.Errorf("annotation name %q: want [A-Za-z_][A-Za-z0-9_]*", k))
			continue
		}
		t, err := template.New(k).Option("missingkey=zero").Parse(r.Annotations[k])
		if err != nil {
			bad("annotations."+k, fmt.Errorf("bad template: %v", err))
			continue
		}
		// Catch references to fields that do not exist now, not at the first page; and a
		// printf verb that does not fit its value (`printf "%d" .Value`: fmt writes
		// "%!d(float64=95.5)" into the page), tried on values of every kind.
		var out strings.Builder
		if err := t.Execute(&out, sampleData); err != nil {
			bad("annotations."+k, fmt.Errorf("bad template: %v", err))
		} else if i := strings.Index(out.String(), "%!"); i >= 0 {
			verb, _, _ := strings.Cut(out.String()[i:], ")")
			bad("annotations."+k, fmt.Errorf("bad template: a printf verb does not fit its value (%s)): .Value and .Threshold are numbers with fractions (%%.1f), labels are text (%%s)", verb))
		}
		p.Annotations[k] = t
	}
	if len(r.Channels) == 0 {
		bad("channels", errors.New("no channels: name at least one channel of alarm.yaml"))
	}
	for i, c := range r.Channels {
		if !validIdent(c) {
			bad("channels", fmt.Errorf("channel name %q: want letters, digits, '.', '_' or '-'", c))
		}
		if slices.Contains(r.Channels[:i], c) {
			bad("channels", fmt.Errorf("channel %q listed twice: every page would go to it twice", c))
		}
	}
	p.Channels = r.Channels
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

func validIdent(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validLabel(s string) bool {
	if len(s) == 0 || len(s) > 128 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ValidLabelName reports whether s is a valid label name ([A-Za-z_][A-Za-z0-9_]*).
func ValidLabelName(s string) bool { return validLabel(s) }
