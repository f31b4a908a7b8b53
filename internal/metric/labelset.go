package metric

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

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
func LabelSetKey(labels map[string]string) string {
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

// ParseLabelSetKey is LabelSetKey's inverse: the labels of a key a store holds (nil for
// ""), with an error naming the key when it is not one.
func ParseLabelSetKey(key string) (map[string]string, error) {
	if key == "" {
		return nil, nil
	}
	var labels map[string]string
	if err := json.Unmarshal([]byte(key), &labels); err != nil {
		return nil, fmt.Errorf("labels %q: %w", key, err)
	}
	return labels, nil
}

// LabelSetKeys computes LabelKey once per label map for the points of one write: batches
// decoded by a remembering metric.Decoder share one map per label set, so a write of
// thousands of points holds few distinct maps (LabelKey per point was a tenth of the
// SQLite store's write). It knows maps by identity, which is sound only while they are
// alive and unchanged: use one for a single call, whose points keep their maps alive
// and must not be modified meanwhile.
type LabelSetKeys struct {
	keys map[unsafe.Pointer]string
}

// Of is LabelSetKey(labels).
func (lk *LabelSetKeys) Of(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	id := reflect.ValueOf(labels).UnsafePointer()
	if k, ok := lk.keys[id]; ok {
		return k
	}
	if lk.keys == nil {
		lk.keys = map[unsafe.Pointer]string{}
	}
	k := LabelSetKey(labels)
	lk.keys[id] = k
	return k
}
