package tail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/rowenc"
)

// Output modes (-o).
const (
	// Pretty is a header line (partition, offset, time, key, format) and the message's
	// JSON indented.
	Pretty = "pretty"
	// JSON is one JSON object per message: where it is and the message itself, for jq.
	JSON = "json"
	// Line is a one-line summary per message.
	Line = "line"
)

// CheckMode reports whether mode is an output mode.
func CheckMode(mode string) error {
	switch mode {
	case Pretty, JSON, Line:
		return nil
	}
	return fmt.Errorf("output %q: want %s, %s or %s", mode, Pretty, JSON, Line)
}

// Printer prints messages in one output mode. Whatever a message holds, what is printed
// is whole lines of printable text: control characters and invalid UTF-8 are escaped.
type Printer struct {
	W    io.Writer
	Mode string
	// Format is Auto or the name of the format the messages are in.
	Format string
	// Instance, when set, skips the rows of other instances, which a topic may carry
	// too. Messages that name no instance (not decoded, or of a format without it) are
	// printed.
	Instance string

	buf []byte
}

// Print prints m and reports whether it did: false for a row of another instance.
func (p *Printer) Print(m bus.Message) (bool, error) {
	var d Decoded
	if m.Value != nil {
		d = Decode(m.Value, p.Format)
	}
	if p.Instance != "" && d.Format != "" && d.Row.Instance != "" && d.Row.Instance != p.Instance {
		return false, nil
	}
	b := p.buf[:0]
	switch {
	case m.Value == nil:
		// A tombstone (debezium-json's, after a delete): a key and no value, which no
		// format decodes and which is no error.
		b = p.appendTombstone(b, m)
	case p.Mode == JSON:
		b = appendJSON(b, m, d)
	case p.Mode == Line:
		b = p.appendLine(b, m, d)
	default:
		b = p.appendPretty(b, m, d)
	}
	p.buf = b
	if _, err := p.W.Write(b); err != nil {
		return false, fmt.Errorf("write: %w", err)
	}
	return true, nil
}

// appendTombstone prints a message with no value in the printer's mode: where it is and
// its key; -o json says "tombstone":true and has no message.
func (p *Printer) appendTombstone(b []byte, m bus.Message) []byte {
	switch p.Mode {
	case JSON:
		return appendJSON(b, m, Decoded{})
	case Line:
		b = appendWhere(b, m)
		b = append(b, " tombstone"...)
		if m.Key != nil {
			b = append(b, " key "...)
			b = appendWord(b, string(m.Key))
		}
		return append(b, '\n')
	}
	return append(p.appendHeader(b, m), " tombstone (no value)\n"...)
}

// appendLine: `TOPIC P:OFFSET TS INSTANCE TYPE DB.TABLE PK DETAIL [gtid G] [xid N]
// [commit]`, the detail being the row for an insert, snapshot or delete, the changed
// columns (`col: before → after`) for an update, the statement for a ddl.
func (p *Printer) appendLine(b []byte, m bus.Message, d Decoded) []byte {
	b = append(appendWhere(b, m), ' ')
	if d.Format == "" {
		b = append(b, "not a row message ("...)
		b = appendText(b, d.Err.Error())
		b = fmt.Appendf(b, "), %d bytes: ", len(m.Value))
		b = appendPreview(b, m.Value, 200)
		return append(b, '\n')
	}
	r := d.Row
	if r.PK == nil { // a format that names no key column (debezium-json, maxwell-json)
		r.PK = keyValues(m.Key, r.Database, r.Table)
	}
	b = appendRowLine(b, r)
	for _, g := range d.Row.Grouped { // one line per row, each where its message is
		b = appendRowLine(append(appendWhere(b, m), ' '), g)
	}
	return b
}

// keyValues is the primary key a row message's key carries, as the wave keys a row of a
// table with a primary key under partition_by pk: `db.table:[v1,v2]` (names with '.',
// ':' or '`' quoted in backquotes, rowenc.appendKeyName), or Debezium's struct of its
// columns; nil for any other key.
func keyValues(key []byte, db, table string) json.RawMessage {
	if len(key) > 0 && key[0] == '{' {
		// Debezium's key (the primary key's columns, bare or as the payload beside its
		// schema) or Maxwell's (database, table and "pk.<column>"s).
		var k map[string]json.RawMessage
		if json.Unmarshal(key, &k) != nil {
			return nil
		}
		if p := k["payload"]; isObject(p) {
			return p
		}
		if _, ok := k["database"]; !ok {
			return json.RawMessage(key)
		}
		pk := map[string]json.RawMessage{}
		for name, v := range k {
			if col, ok := strings.CutPrefix(name, "pk."); ok {
				pk[col] = v
			}
		}
		if len(pk) == 0 {
			return nil
		}
		b, _ := json.Marshal(pk) // sorted by column: Maxwell's key order is the key's, which a map loses
		return b
	}
	prefix := rowenc.TableKey(db, table) + ":"
	k, ok := bytes.CutPrefix(key, []byte(prefix))
	if !ok || len(k) == 0 || k[0] != '[' || !json.Valid(k) {
		return nil
	}
	return json.RawMessage(k)
}

// appendRowLine is appendLine's part of one row, from its time on.
func appendRowLine(b []byte, r Row) []byte {
	b = appendTS(b, r.TS)
	instance := r.Instance
	if instance == "" {
		instance = "-" // a format that carries none (canal's, debezium-json), as a missing key
	}
	for _, w := range []string{instance, r.Type, r.Database + "." + r.Table} {
		b = append(b, ' ')
		b = appendWord(b, w)
	}
	b = append(b, ' ')
	switch r.Type {
	case rowenc.TypeDDL:
		b = appendJSONString(b, r.SQL)
	case rowenc.TypeUpdate:
		b = appendCompact(b, r.PK)
		b = append(b, ' ')
		b = appendChanges(b, r.Data, r.Old)
	default:
		b = appendCompact(b, r.PK)
		b = append(b, ' ')
		b = appendCompact(b, r.Data)
	}
	if r.GTID != "" {
		b = append(b, " gtid "...)
		b = appendWord(b, r.GTID)
	}
	if r.XID != 0 {
		b = append(b, " xid "...)
		b = strconv.AppendUint(b, r.XID, 10)
	}
	if r.Commit {
		b = append(b, " commit"...)
	}
	return append(b, '\n')
}

// appendPretty: a header line, then the message's JSON indented by two spaces.
func (p *Printer) appendPretty(b []byte, m bus.Message, d Decoded) []byte {
	b = p.appendHeader(b, m)
	if d.Format == "" {
		b = append(b, " not a row message ("...)
		b = appendText(b, d.Err.Error())
		b = fmt.Appendf(b, "), %d bytes:\n", len(m.Value))
		if json.Valid(m.Value) {
			return appendIndent(b, m.Value)
		}
		b = appendPreview(b, m.Value, 4096)
		return append(b, '\n')
	}
	b = append(b, " format "...)
	b = append(b, d.Format...)
	b = append(b, '\n')
	return appendIndent(b, d.Doc)
}

// appendHeader appends where a message is, in -o pretty: its topic, partition, offset,
// time and key.
func (p *Printer) appendHeader(b []byte, m bus.Message) []byte {
	if m.Topic != "" {
		b = append(b, "topic "...)
		b = appendWord(b, m.Topic)
		b = append(b, ' ')
	}
	b = fmt.Appendf(b, "partition %d offset %d", m.Partition, m.Offset)
	if !m.Time.IsZero() {
		b = append(b, " time "...)
		b = m.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	}
	if m.Key != nil {
		b = append(b, " key "...)
		b = appendWord(b, string(m.Key))
	}
	return b
}

// jsonLine is one message in -o json.
type jsonLine struct {
	Topic     string          `json:"topic"`
	Partition int             `json:"partition"`
	Offset    int64           `json:"offset"`
	Time      string          `json:"time,omitempty"`
	Key       *string         `json:"key,omitempty"`
	Format    string          `json:"format,omitempty"`
	Error     string          `json:"error,omitempty"`
	Message   json.RawMessage `json:"message,omitempty"`
	// MessageText is a message that is not JSON but UTF-8 text; MessageBase64 any other.
	MessageText   *string `json:"message_text,omitempty"`
	MessageBase64 []byte  `json:"message_base64,omitempty"`
	// Tombstone is a message with no value at all (not an empty one).
	Tombstone bool `json:"tombstone,omitempty"`
}

func appendJSON(b []byte, m bus.Message, d Decoded) []byte {
	l := jsonLine{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Format: d.Format}
	if !m.Time.IsZero() {
		l.Time = m.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	if m.Key != nil {
		k := string(m.Key)
		l.Key = &k
	}
	switch {
	case m.Value == nil:
		l.Tombstone = true
	case d.Format != "":
		l.Message = d.Doc
	case json.Valid(m.Value):
		l.Error, l.Message = d.Err.Error(), m.Value
	case utf8.Valid(m.Value):
		l.Error = d.Err.Error()
		s := string(m.Value)
		l.MessageText = &s
	default:
		l.Error, l.MessageBase64 = d.Err.Error(), m.Value
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a row's "<" stays "<"
	if err := enc.Encode(l); err != nil {
		// Only a message that is JSON but not as the encoder wants it could get here.
		l.Message, l.MessageBase64 = nil, m.Value
		buf.Reset()
		_ = enc.Encode(l)
	}
	return appendGraphicJSON(b, buf.Bytes())
}

// appendChanges appends an update's changed columns in the order of old (the table's):
// `name: before → after, …`.
func appendChanges(b []byte, data, old json.RawMessage) []byte {
	names, before, err := orderedObject(old)
	if err != nil || len(names) == 0 {
		return append(b, "(no column changed)"...)
	}
	var after map[string]json.RawMessage
	_ = json.Unmarshal(data, &after)
	for i, n := range names {
		if i > 0 {
			b = append(b, ", "...)
		}
		if isIdent(n) {
			b = append(b, n...)
		} else {
			b = appendJSONString(b, n)
		}
		b = append(b, ": "...)
		b = appendCompact(b, before[i])
		b = append(b, " → "...)
		if v, ok := after[n]; ok {
			b = appendCompact(b, v)
		} else {
			b = append(b, '?')
		}
	}
	return b
}

// orderedObject returns a JSON object's keys in their order, with their values.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var names []string
	var values []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		names, values = append(names, name), append(values, v)
	}
	return names, values, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '$' && (r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

func appendTS(b []byte, ts int64) []byte {
	t := time.Unix(ts, 0).UTC()
	if t.Year() < 0 || t.Year() > 9999 {
		return strconv.AppendInt(append(b, "ts="...), ts, 10)
	}
	return t.AppendFormat(b, time.RFC3339)
}

// appendCompact appends a JSON value on one line; "-" for none.
func appendCompact(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return append(b, '-')
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return appendPreview(b, raw, 200)
	}
	return appendGraphicJSON(b, buf.Bytes())
}

// appendIndent appends a JSON document indented, and a newline.
func appendIndent(b []byte, doc []byte) []byte {
	var buf bytes.Buffer
	// Indent keeps the spaces after the document (a tab would be escaped below).
	if err := json.Indent(&buf, bytes.TrimSpace(doc), "", "  "); err != nil {
		b = appendPreview(b, doc, 4096)
	} else {
		b = appendGraphicJSON(b, buf.Bytes())
	}
	return append(b, '\n')
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return appendGraphicJSON(b, q)
}

// appendGraphicJSON appends JSON text with every character that is not graphic (a
// bidirectional override, U+2028, a byte that is not UTF-8) as its \u escape, which reads
// the same in a JSON string, the only place where JSON text can hold one; the newlines
// and spaces of indentation stay. A terminal then shows the text as it is meant.
func appendGraphicJSON(b, j []byte) []byte {
	for len(j) > 0 {
		r, n := utf8.DecodeRune(j)
		switch {
		case r == '\n' || r == ' ':
			b = append(b, j[0])
		case r == utf8.RuneError && n <= 1:
			b = append(b, `\ufffd`...)
		case !unicode.IsGraphic(r) && r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b = fmt.Appendf(b, `\u%04x\u%04x`, r1, r2)
		case !unicode.IsGraphic(r):
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = append(b, j[:n]...)
		}
		j = j[n:]
	}
	return b
}

// appendWord appends s as it is when it is one word of printable text, else quoted:
// names and keys cannot break a line or the terminal.
// appendWhere appends where a message is, in -o line: `TOPIC P:OFFSET`. The topic
// comes whatever was read (an instance's topic, -topic, a file of several): lines of
// several topics, tails or files then read, grep and merge alike. A message without
// one (none from a bus or a file has that) starts at its partition.
func appendWhere(b []byte, m bus.Message) []byte {
	if m.Topic != "" {
		b = append(appendWord(b, m.Topic), ' ')
	}
	return fmt.Appendf(b, "%d:%d", m.Partition, m.Offset)
}

func appendWord(b []byte, s string) []byte {
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }) >= 0 || !utf8.ValidString(s) {
		return strconv.AppendQuoteToGraphic(b, s)
	}
	return append(b, s...)
}

// appendText appends a message (an error's) with anything unprintable escaped.
func appendText(b []byte, s string) []byte {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) >= 0 || !utf8.ValidString(s) {
		q := strconv.QuoteToGraphic(s)
		return append(b, q[1:len(q)-1]...)
	}
	return append(b, s...)
}

// appendPreview appends at most max bytes of a payload and how many bytes were left: JSON
// compacted, as it is when it is printable, anything else quoted.
func appendPreview(b []byte, v []byte, max int) []byte {
	isJSON := false
	if json.Valid(v) {
		var buf bytes.Buffer
		if json.Compact(&buf, v) == nil {
			v, isJSON = buf.Bytes(), true
		}
	}
	cut := v
	if len(cut) > max {
		cut = cut[:max]
		// Not in the middle of a character, when the cut can avoid it.
		for i := 0; i < utf8.UTFMax && !utf8.Valid(cut) && len(cut) > 0; i++ {
			cut = cut[:len(cut)-1]
		}
	}
	if isJSON && utf8.Valid(cut) {
		b = appendGraphicJSON(b, cut)
	} else {
		b = strconv.AppendQuoteToGraphic(b, string(cut))
	}
	if more := len(v) - len(cut); more > 0 {
		b = fmt.Appendf(b, "… (%d more bytes)", more)
	}
	return b
}
