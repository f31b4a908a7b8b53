package tail

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/binlake/binlake/wave/rowenc"
)

// The peer formats a subscription can publish besides json (docs/design.md, "Message
// formats"): Canal's FlatMessage, Maxwell's and Debezium's JSON. Each is told from the
// others by the fields only it has, so auto-detection never takes one for another.

// canalJSON decodes canal-json: Canal's FlatMessage (isDdl, an upper-case type, data as
// an array of rows).
type canalJSON struct{}

func (canalJSON) Name() string { return rowenc.FormatCanalJSON }

func (canalJSON) Decode(value []byte) (Row, json.RawMessage, error) {
	v, err := jsonObject(value)
	if err != nil {
		return Row{}, nil, err
	}
	var m struct {
		Data     []json.RawMessage `json:"data"`
		Database *string           `json:"database"`
		ES       int64             `json:"es"`
		GTID     string            `json:"gtid"`
		ID       uint64            `json:"id"`
		IsDDL    *bool             `json:"isDdl"`
		Old      []json.RawMessage `json:"old"`
		PKNames  []string          `json:"pkNames"`
		SQL      string            `json:"sql"`
		Table    *string           `json:"table"`
		Type     *string           `json:"type"`
	}
	if err := json.Unmarshal(v, &m); err != nil {
		return Row{}, nil, err
	}
	if m.IsDDL == nil || m.Type == nil || m.Database == nil || m.Table == nil {
		return Row{}, nil, errors.New(`no "isDdl", "type", "database" or "table" field`)
	}
	r := Row{Database: *m.Database, Table: *m.Table, TS: m.ES / 1000, GTID: m.GTID, Pos: m.ID}
	if *m.IsDDL {
		r.Type, r.SQL = rowenc.TypeDDL, m.SQL
		return r, json.RawMessage(v), nil
	}
	switch *m.Type {
	case "INSERT", "UPDATE", "DELETE":
		r.Type = strings.ToLower(*m.Type)
	default:
		return Row{}, nil, fmt.Errorf("type %q: want INSERT, UPDATE or DELETE", *m.Type)
	}
	if len(m.Data) != 1 || !isObject(m.Data[0]) {
		return Row{}, nil, fmt.Errorf(`%d rows in "data": want one object`, len(m.Data))
	}
	r.Data = m.Data[0]
	if len(m.Old) == 1 && isObject(m.Old[0]) {
		r.Old = m.Old[0]
	}
	r.PK = pkOf(r.Data, m.PKNames)
	return r, json.RawMessage(v), nil
}

// maxwellJSON decodes maxwell-json: database, table, a lower-case type (bootstrap-insert
// for a snapshot row), ts in seconds, data, and old on updates.
type maxwellJSON struct{}

func (maxwellJSON) Name() string { return rowenc.FormatMaxwellJSON }

func (maxwellJSON) Decode(value []byte) (Row, json.RawMessage, error) {
	v, err := jsonObject(value)
	if err != nil {
		return Row{}, nil, err
	}
	var m struct {
		Database *string         `json:"database"`
		Table    *string         `json:"table"`
		Type     *string         `json:"type"`
		TS       *int64          `json:"ts"`
		XID      uint64          `json:"xid"`
		Commit   bool            `json:"commit"`
		Data     json.RawMessage `json:"data"`
		Old      json.RawMessage `json:"old"`
		Instance json.RawMessage `json:"instance"`
	}
	if err := json.Unmarshal(v, &m); err != nil {
		return Row{}, nil, err
	}
	if m.Database == nil || m.Table == nil || m.Type == nil || m.TS == nil || m.Instance != nil {
		return Row{}, nil, errors.New(`no "database", "table", "type" or "ts" field, or an "instance" (json's)`)
	}
	r := Row{Database: *m.Database, Table: *m.Table, TS: *m.TS, XID: m.XID, Commit: m.Commit, Data: m.Data, Old: m.Old}
	switch *m.Type {
	case "insert", "update", "delete":
		r.Type = *m.Type
	case "bootstrap-insert":
		r.Type = rowenc.TypeSnapshot
	default:
		return Row{}, nil, fmt.Errorf("type %q: want insert, update, delete or bootstrap-insert", *m.Type)
	}
	if !isObject(m.Data) {
		return Row{}, nil, fmt.Errorf(`type %s without a "data" object`, *m.Type)
	}
	if len(m.Old) > 0 && !isObject(m.Old) {
		return Row{}, nil, errors.New(`"old" is not an object`)
	}
	return r, json.RawMessage(v), nil
}

// debeziumJSON decodes debezium-json: the envelope (before, after, source, op), bare or
// as the payload beside its schema.
type debeziumJSON struct{}

func (debeziumJSON) Name() string { return rowenc.FormatDebeziumJSON }

func (debeziumJSON) Decode(value []byte) (Row, json.RawMessage, error) {
	v, err := jsonObject(value)
	if err != nil {
		return Row{}, nil, err
	}
	type envelope struct {
		Before json.RawMessage `json:"before"`
		After  json.RawMessage `json:"after"`
		Source *struct {
			Name  string `json:"name"`
			TSMs  int64  `json:"ts_ms"`
			DB    string `json:"db"`
			Table string `json:"table"`
			GTID  string `json:"gtid"`
			File  string `json:"file"`
			Pos   uint64 `json:"pos"`
		} `json:"source"`
		Op      *string   `json:"op"`
		Payload *envelope `json:"payload"`
	}
	var m envelope
	if err := json.Unmarshal(v, &m); err != nil {
		return Row{}, nil, err
	}
	if m.Payload != nil {
		m = *m.Payload
	}
	if m.Op == nil || m.Source == nil {
		return Row{}, nil, errors.New(`no "op" or "source" field`)
	}
	s := m.Source
	r := Row{Instance: s.Name, Database: s.DB, Table: s.Table, TS: s.TSMs / 1000, GTID: s.GTID, File: s.File, Pos: s.Pos}
	switch *m.Op {
	case "c", "r":
		r.Type, r.Data = rowenc.TypeInsert, m.After
		if *m.Op == "r" {
			r.Type = rowenc.TypeSnapshot
		}
	case "u":
		r.Type, r.Data = rowenc.TypeUpdate, m.After
		r.Old = changed(m.Before, m.After)
	case "d":
		r.Type, r.Data = rowenc.TypeDelete, m.Before
	default:
		return Row{}, nil, fmt.Errorf("op %q: want c, u, d or r", *m.Op)
	}
	if !isObject(r.Data) {
		return Row{}, nil, fmt.Errorf(`op %s without its row object`, *m.Op)
	}
	return r, json.RawMessage(v), nil
}

// jsonObject is value trimmed, when it is a JSON object.
func jsonObject(value []byte) ([]byte, error) {
	v := bytes.TrimSpace(value)
	if len(v) == 0 || v[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	return v, nil
}

// pkOf is the object of the primary key's columns of data, or nil.
func pkOf(data json.RawMessage, names []string) json.RawMessage {
	if len(names) == 0 {
		return nil
	}
	var row map[string]json.RawMessage
	if json.Unmarshal(data, &row) != nil {
		return nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		b.Write(k)
		b.WriteByte(':')
		if v, ok := row[n]; ok {
			b.Write(v)
		} else {
			b.WriteString("null")
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// changed is the columns of before whose value differs in after (an update's "old").
func changed(before, after json.RawMessage) json.RawMessage {
	names, vals, err := orderedObject(before)
	if err != nil {
		return nil
	}
	var a map[string]json.RawMessage
	if json.Unmarshal(after, &a) != nil {
		return nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for i, name := range names {
		if bytes.Equal(compactJSON(vals[i]), compactJSON(a[name])) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(vals[i])
	}
	b.WriteByte('}')
	return b.Bytes()
}

func compactJSON(v json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}
