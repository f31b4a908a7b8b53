package tail

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/binlake/binlake/wave/rowenc"
)

// rowJSON is the wave's own JSON row message (docs/design.md, "Row message";
// rowenc.EncodeRow and rowenc.EncodeDDL write it).
type rowJSON struct{}

func (rowJSON) Name() string { return "json" }

// Decode takes a JSON object with the contract's header (instance, database, table, type,
// ts, commit) and, for a row, its data: that is what tells it from other JSON formats,
// none of which has instance and commit beside a lower-case type. Fields it does not know
// are allowed: a newer wave may add some.
func (rowJSON) Decode(value []byte) (Row, json.RawMessage, error) {
	v := bytes.TrimSpace(value)
	if len(v) == 0 || v[0] != '{' {
		return Row{}, nil, errors.New("not a JSON object")
	}
	var m struct {
		Instance *string         `json:"instance"`
		Database *string         `json:"database"`
		Table    *string         `json:"table"`
		Type     *string         `json:"type"`
		TS       *int64          `json:"ts"`
		GTID     string          `json:"gtid"`
		File     string          `json:"file"`
		Pos      uint64          `json:"pos"`
		XID      uint64          `json:"xid"`
		Commit   *bool           `json:"commit"`
		PK       json.RawMessage `json:"pk"`
		Data     json.RawMessage `json:"data"`
		Old      json.RawMessage `json:"old"`
		SQL      *string         `json:"sql"`
	}
	if err := json.Unmarshal(v, &m); err != nil {
		return Row{}, nil, err
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"instance", m.Instance != nil}, {"database", m.Database != nil}, {"table", m.Table != nil},
		{"type", m.Type != nil}, {"ts", m.TS != nil}, {"commit", m.Commit != nil}} {
		if !f.set {
			return Row{}, nil, fmt.Errorf("no %q field", f.name)
		}
	}
	r := Row{Instance: *m.Instance, Database: *m.Database, Table: *m.Table, Type: *m.Type, TS: *m.TS,
		GTID: m.GTID, File: m.File, Pos: m.Pos, XID: m.XID, Commit: *m.Commit}
	switch r.Type {
	case rowenc.TypeDDL:
		if m.SQL == nil {
			return Row{}, nil, errors.New(`a ddl without its "sql"`)
		}
		r.SQL = *m.SQL
	case rowenc.TypeInsert, rowenc.TypeUpdate, rowenc.TypeDelete, rowenc.TypeSnapshot:
		if !isObject(m.Data) {
			return Row{}, nil, fmt.Errorf(`type %s without a "data" object`, r.Type)
		}
		if len(m.PK) > 0 && !isObject(m.PK) && string(m.PK) != "null" {
			return Row{}, nil, errors.New(`"pk" is neither an object nor null`)
		}
		if len(m.Old) > 0 && !isObject(m.Old) {
			return Row{}, nil, errors.New(`"old" is not an object`)
		}
		r.PK, r.Data, r.Old = m.PK, m.Data, m.Old
	default:
		return Row{}, nil, fmt.Errorf("type %q: want insert, update, delete, snapshot or ddl", r.Type)
	}
	return r, json.RawMessage(v), nil
}

func isObject(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '{'
}
