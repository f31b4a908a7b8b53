package store

import (
	"slices"

	"github.com/binlake/binlake/internal/jsonenc"
)

// LabelKey is the canonical encoding of a label set that both stores index, so that
// "exactly these labels" is one equality test: "" for nil or empty labels, otherwise the
// JSON object with sorted keys (unambiguous whatever the keys and values contain).
//
// The bytes are exactly what encoding/json.Marshal produces for the map, which is how
// they were computed before and how existing SQLite files and Elasticsearch documents
// hold them; it is built by hand because the ingest path computes one per point and
// reflection cost a fifth of the SQLite store's time.
func LabelKey(labels map[string]string) string {
	switch len(labels) {
	case 0:
		return ""
	case 1:
		for k, v := range labels {
			b := make([]byte, 0, len(k)+len(v)+7)
			b = append(b, '{')
			b = jsonenc.AppendStringHTML(b, k)
			b = append(b, ':')
			b = jsonenc.AppendStringHTML(b, v)
			return string(append(b, '}'))
		}
	}
	var arr [MaxLabels]string
	keys := arr[:0]
	size := 2
	for k, v := range labels {
		keys = append(keys, k)
		size += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendStringHTML(b, k)
		b = append(b, ':')
		b = jsonenc.AppendStringHTML(b, labels[k])
	}
	return string(append(b, '}'))
}
