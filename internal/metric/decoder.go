package metric

import "bytes"

// Bounds of a Decoder's memory: past them it forgets everything and starts over, so a
// stream of ever new names or label values cannot grow it without end.
const (
	maxInterned    = 1 << 14
	maxInternLen   = 128
	maxLabelSets   = 1 << 12
	maxLabelSetLen = 512
)

// Decoder decodes batches as Decode does (same rules, same errors), remembering the
// point names, label keys and values and whole label sets it decoded: an agent sends the
// same names and labels every tick, so a consumer that decodes a stream with one Decoder
// allocates little beyond the points. The batches it returns share those strings and
// label maps with each other: they must be treated as read-only. A Decoder is not safe
// for concurrent use; keep one per consuming goroutine.
type Decoder struct {
	strs   map[string]string
	labels map[string]map[string]string // the raw bytes of a labels object → its map
}

// NewDecoder returns an empty Decoder.
func NewDecoder() *Decoder {
	return &Decoder{strs: map[string]string{}, labels: map[string]map[string]string{}}
}

// Decode parses and validates one batch (see Decode).
func (c *Decoder) Decode(data []byte) (Batch, error) { return decode(data, c, nil) }

// DecodeInto is Decode with the points in points' array when it is large enough (a
// consumer that is done with a batch before it decodes the next hands the last batch's
// Points back): the points were half of what the alarm allocated per message.
func (c *Decoder) DecodeInto(data []byte, points []Point) (Batch, error) {
	return decode(data, c, points[:0])
}

// str returns b as a string, the remembered one when it was seen before.
func (c *Decoder) str(b []byte) string {
	if s, ok := c.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(s) <= maxInternLen {
		if len(c.strs) >= maxInterned {
			clear(c.strs)
		}
		c.strs[s] = s
	}
	return s
}

// labelSet returns the map of the labels object at d.pos if these exact bytes were
// decoded before, and moves past it. The object's extent is up to the first '}' outside
// a string: label values are strings, so that is where a valid object ends, and bytes
// remembered are bytes that once decoded without error.
func (c *Decoder) labelSet(d *decoder) (map[string]string, bool) {
	data := d.data[d.pos:]
	if len(data) == 0 || data[0] != '{' {
		return nil, false
	}
	in := false
	for i := 1; i < len(data) && i <= maxLabelSetLen; i++ {
		switch ch := data[i]; {
		case in && ch == '\\':
			i++
		case ch == '"':
			in = !in
		case !in && ch == '}':
			m, ok := c.labels[string(data[:i+1])]
			if ok {
				d.pos += i + 1
			}
			return m, ok
		}
	}
	return nil, false
}

// rememberLabels keeps a labels object that decoded without error into a set that keeps
// the label rules of Validate (decoder.labelsUnchecked relies on it).
func (c *Decoder) rememberLabels(raw []byte, m map[string]string) {
	if len(raw) > maxLabelSetLen || bytes.IndexByte(raw, '{') != 0 {
		return
	}
	if len(c.labels) >= maxLabelSets {
		clear(c.labels)
	}
	c.labels[string(raw)] = m
}
