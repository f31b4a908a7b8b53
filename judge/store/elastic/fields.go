package elastic

import (
	"fmt"
	"strings"
)

// A document holds every unlabelled metric of a node and time, so the engine refusing
// it for one field (a mapping conflict: "zz.conf.sub" once "zz.conf" is a number) would
// lose cpu.util and the rest with it. When the refusal names the field, Write sends the
// document again without the metrics it names (maxTrims times at most, since the engine
// names one field per refusal), and counts only those as refused.

// maxTrims bounds how many times one document is sent again without the metrics a
// refusal named; after that the document is refused whole.
const maxTrims = 5

// refusedMetric is a metric taken out of a document because the engine refused it.
type refusedMetric struct {
	name   string
	reason string
}

// mappingError reports whether a bulk item's error is one a document's field causes
// (a mapping or parsing conflict), rather than one of the whole request or index.
func mappingError(typ string) bool {
	switch typ {
	case "mapper_parsing_exception", "document_parsing_exception", "illegal_argument_exception",
		"mapper_exception", "strict_dynamic_mapping_exception":
		return true
	}
	return false
}

// fieldsOf returns the field paths a refusal reason names in brackets: those under "m."
// (the metric, relative to the metrics object), and a bare one after "field [" (the
// engine names a dynamically added field relative to its object). Other bracketed words
// ("of type [double]") are not fields.
func fieldsOf(reason string) []string {
	var fields []string
	for rest := reason; ; {
		i := strings.IndexByte(rest, '[')
		if i < 0 {
			return fields
		}
		j := strings.IndexByte(rest[i+1:], ']')
		if j < 0 {
			return fields
		}
		tok := rest[i+1 : i+1+j]
		before := rest[:i]
		rest = rest[i+1+j+1:]
		switch {
		case strings.HasPrefix(tok, "m."):
			fields = append(fields, tok[len("m."):])
		case strings.HasSuffix(before, "field ") && tok != "" && !strings.ContainsAny(tok, " "):
			fields = append(fields, tok)
		}
	}
}

// offending returns the indices of d's metrics that the fields a refusal named point at:
// those named exactly, or else those a named field is a dot-prefix of or that are a
// dot-prefix of one ("zz.conf" named, "zz.conf.sub" sent). None: the refusal names no
// metric of d.
func (d *document) offending(fields []string) []int {
	var exact, related []int
	for i, m := range d.metrics {
		for _, f := range fields {
			if m.name == f {
				exact = append(exact, i)
				break
			}
			if strings.HasPrefix(m.name, f+".") || strings.HasPrefix(f, m.name+".") {
				related = append(related, i)
				break
			}
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return related
}

// trim takes the metrics a refusal (status, type, reasons) names out of d, records them
// in d.refused, and reports whether d is to be sent again: false if the refusal names no
// metric of d, would leave it none, or d was trimmed maxTrims times already; then d is
// refused whole.
func (d *document) trim(status int, typ string, reasons ...string) bool {
	if !mappingError(typ) || d.trims >= maxTrims {
		return false
	}
	var fields []string
	for _, r := range reasons {
		if strings.Contains(r, "[labels.") {
			// A label's conflict: a bare field it names is a label's, not a metric's.
			return false
		}
		fields = append(fields, fieldsOf(r)...)
	}
	idx := d.offending(fields)
	if len(idx) == 0 || len(idx) >= len(d.metrics) {
		return false
	}
	why := fmt.Sprintf("%d %s: %s", status, typ, reasons[0])
	kept := d.metrics[:0]
	next := 0
	for i, m := range d.metrics {
		if next < len(idx) && idx[next] == i {
			d.refused = append(d.refused, refusedMetric{m.name, why})
			next++
			continue
		}
		kept = append(kept, m)
	}
	d.metrics = kept
	d.trims++
	return true
}
