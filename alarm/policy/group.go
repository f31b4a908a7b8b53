package policy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// GroupAll as the only label of group_by makes every alert its own group: Alertmanager's
// special value "...", grouping by every label.
const GroupAll = "..."

// DefaultGroupBy is the grouping of a policy that sets no group_by: one group per policy
// (a policy has one name and one severity), as the alarm grouped before group_by existed.
var DefaultGroupBy = []string{LabelAlertName, LabelSeverity}

// compileGroupBy validates group_by; nil (not set) is DefaultGroupBy.
func compileGroupBy(in []string) ([]string, error) {
	if in == nil {
		return DefaultGroupBy, nil
	}
	if len(in) == 0 {
		return nil, errors.New("empty: leave group_by out for one group per policy, name labels (e.g. [instance]), or [\"...\"] for one group per alert")
	}
	seen := map[string]bool{}
	for _, l := range in {
		switch {
		case l == GroupAll && len(in) > 1:
			return nil, errors.New("\"...\" (every label) must be group_by's only entry")
		case l == GroupAll:
		case !validLabel(l):
			return nil, fmt.Errorf("label name %q: want [A-Za-z_][A-Za-z0-9_]* or \"...\" alone", l)
		case seen[l]:
			return nil, fmt.Errorf("label %q listed twice", l)
		}
		seen[l] = true
	}
	return slices.Clone(in), nil
}

// compileBy checks a policy's by: label names, each once, none the alarm sets; only a
// policy with a condition has point labels to choose from.
func compileBy(in []string, hasCondition bool) ([]string, error) {
	if !hasCondition {
		return nil, errors.New("only for a policy with a condition: a nodata alert has no point labels")
	}
	seen := map[string]bool{}
	for _, l := range in {
		switch {
		case !validLabel(l):
			return nil, fmt.Errorf("label name %q: want [A-Za-z_][A-Za-z0-9_]*", l)
		case l == LabelAlertName || l == LabelNode || l == LabelSeverity || l == LabelMetric:
			return nil, fmt.Errorf("label %q is the alarm's, always the alert's: name point labels only", l)
		case seen[l]:
			return nil, fmt.Errorf("label %q listed twice", l)
		}
		seen[l] = true
	}
	return append([]string{}, in...), nil // [] (not nil): no point label tells alerts apart
}

// Carries reports whether an alert of p can carry label l: every label but a point
// label its by leaves out.
func (p *Policy) Carries(l string) bool {
	if p.By == nil || slices.Contains(p.By, l) {
		return true
	}
	switch l {
	case LabelAlertName, LabelNode, LabelSeverity, LabelMetric:
		return true
	case "reason": // the nodata alert's
		return p.NoData > 0
	}
	if _, ok := p.AlertLabels[l]; ok {
		return true
	}
	k, ok := strings.CutPrefix(l, "exported_")
	return ok && slices.Contains(p.By, k)
}

// Group returns the notification group of an alert of p with labels l: its key and its
// group labels. Alerts of one policy whose group_by labels have the same values are one
// group (a label the alert lacks or has empty is left out of the group labels: absent
// and empty are one, as in Alertmanager); groups never span policies, since a policy
// names the channels and timers. The key is "policy/severity" (what a policy without group_by always had), then
// ":{label=\"value\", …}" with the group labels other than alertname and severity, sorted.
func (p *Policy) Group(l map[string]string) (key string, labels map[string]string) {
	by := p.GroupBy
	if by == nil {
		by = DefaultGroupBy
	}
	if len(by) == 1 && by[0] == GroupAll {
		labels = maps.Clone(l)
	} else {
		labels = make(map[string]string, len(by))
		for _, k := range by {
			if v := l[k]; v != "" {
				labels[k] = v
			}
		}
	}
	var b strings.Builder
	b.WriteString(p.Name)
	b.WriteByte('/')
	b.WriteString(p.Severity.String())
	names := make([]string, 0, len(labels))
	for k := range labels {
		if k != LabelAlertName && k != LabelSeverity {
			names = append(names, k)
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		b.WriteString(":{")
		for i, k := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(strconv.Quote(labels[k]))
		}
		b.WriteByte('}')
	}
	return b.String(), labels
}
