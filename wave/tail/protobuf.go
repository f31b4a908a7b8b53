package tail

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/binlake/binlake/internal/jsonenc"
	"github.com/binlake/binlake/wave/rowenc"
	"github.com/binlake/binlake/wave/rowenc/canalpb"
	"github.com/binlake/binlake/wave/rowenc/rowpb"
)

// The protobuf formats (docs/design.md, "Message formats"), decoded with their generated
// types. Bytes of another format may happen to parse as protobuf (a JSON object's '{'
// starts a field 15 group), so each takes a message only when nothing in it is unknown
// to its types and the fields it always has are there; they come after the JSON formats
// in auto-detection.

// rowProto decodes protobuf: BinLake's binlake.v1.Row.
type rowProto struct{}

func (rowProto) Name() string { return rowenc.FormatProtobuf }

func (rowProto) Decode(value []byte) (Row, json.RawMessage, error) {
	var m rowpb.Row
	if err := proto.Unmarshal(value, &m); err != nil {
		return Row{}, nil, err
	}
	if len(m.ProtoReflect().GetUnknown()) > 0 || m.GetType() == rowpb.Type_TYPE_UNSPECIFIED || m.GetTable() == "" {
		return Row{}, nil, errors.New("not a binlake.v1.Row (unknown fields, or no type or table)")
	}
	r := Row{Instance: m.GetInstance(), Database: m.GetDatabase(), Table: m.GetTable(),
		Type: strings.ToLower(strings.TrimPrefix(m.GetType().String(), "TYPE_")), TS: m.GetTs(),
		GTID: m.GetGtid(), File: m.GetFile(), Pos: m.GetPos(), XID: m.GetXid(), Commit: m.GetCommit(), SQL: m.GetSql()}
	if r.Type != rowenc.TypeDDL {
		r.PK = json.RawMessage("null")
		if len(m.GetPk()) > 0 {
			r.PK = fieldsJSON(m.GetPk())
		}
		r.Data = fieldsJSON(m.GetData())
		if r.Type == rowenc.TypeUpdate {
			r.Old = fieldsJSON(m.GetOld())
		}
	}
	doc, err := protojson.Marshal(&m)
	if err != nil {
		return Row{}, nil, err
	}
	return r, doc, nil
}

// fieldsJSON is Fields as the JSON row message's object: numbers as numbers, bytes in
// base64, a JSON document as itself.
func fieldsJSON(fs []*rowpb.Field) json.RawMessage {
	out := []byte{'{'}
	for i, f := range fs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(jsonenc.AppendString(out, f.GetName()), ':')
		switch v := f.GetValue().(type) {
		case *rowpb.Field_Int:
			out = strconv.AppendInt(out, v.Int, 10)
		case *rowpb.Field_Uint:
			out = strconv.AppendUint(out, v.Uint, 10)
		case *rowpb.Field_Float:
			out = strconv.AppendFloat(out, float64(v.Float), 'g', -1, 32)
		case *rowpb.Field_Double:
			out = strconv.AppendFloat(out, v.Double, 'g', -1, 64)
		case *rowpb.Field_String_:
			out = jsonenc.AppendString(out, v.String_)
		case *rowpb.Field_Bytes:
			out = jsonenc.AppendString(out, base64.StdEncoding.EncodeToString(v.Bytes))
		case *rowpb.Field_Json:
			if json.Valid([]byte(v.Json)) {
				out = append(out, v.Json...)
			} else {
				out = jsonenc.AppendString(out, v.Json)
			}
		default:
			out = append(out, "null"...)
		}
	}
	return append(out, '}')
}

// canalProto decodes canal-protobuf: Canal's Packet of Messages of Entry bytes. BinLake
// sends one entry per message, whose RowChange holds the rows of a rows event that go
// to one partition: the first is the Row, the others its Grouped.
type canalProto struct{}

func (canalProto) Name() string { return rowenc.FormatCanalProtobuf }

func (canalProto) Decode(value []byte) (Row, json.RawMessage, error) {
	var p canalpb.Packet
	if err := proto.Unmarshal(value, &p); err != nil {
		return Row{}, nil, err
	}
	if len(p.ProtoReflect().GetUnknown()) > 0 || p.GetType() != canalpb.PacketType_MESSAGES {
		return Row{}, nil, errors.New("not a Canal Packet of MESSAGES")
	}
	var ms canalpb.Messages
	if err := proto.Unmarshal(p.GetBody(), &ms); err != nil || len(ms.ProtoReflect().GetUnknown()) > 0 || len(ms.GetMessages()) == 0 {
		return Row{}, nil, fmt.Errorf("a Canal Packet whose body is not Messages of entries (%v)", err)
	}
	var e canalpb.Entry
	var rc canalpb.RowChange
	if err := proto.Unmarshal(ms.GetMessages()[0], &e); err != nil {
		return Row{}, nil, err
	}
	if e.GetEntryType() != canalpb.EntryType_ROWDATA {
		return Row{}, nil, fmt.Errorf("a Canal %s entry, not ROWDATA", e.GetEntryType())
	}
	if err := proto.Unmarshal(e.GetStoreValue(), &rc); err != nil {
		return Row{}, nil, err
	}
	h := e.GetHeader()
	r := Row{Database: h.GetSchemaName(), Table: h.GetTableName(), TS: h.GetExecuteTime() / 1000,
		GTID: h.GetGtid(), File: h.GetLogfileName(), Pos: uint64(h.GetLogfileOffset())}
	if rc.GetIsDdl() {
		r.Type, r.SQL = rowenc.TypeDDL, rc.GetSql()
	} else {
		switch rc.GetEventType() {
		case canalpb.EventType_INSERT, canalpb.EventType_UPDATE, canalpb.EventType_DELETE:
			r.Type = strings.ToLower(rc.GetEventType().String())
		default:
			return Row{}, nil, fmt.Errorf("a Canal %s row change", rc.GetEventType())
		}
		if len(rc.GetRowDatas()) == 0 {
			return Row{}, nil, errors.New("a Canal row change without rows")
		}
		head := r
		for i, rd := range rc.GetRowDatas() {
			row := canalRow(head, rd)
			if i == 0 {
				r = row
			} else {
				r.Grouped = append(r.Grouped, row)
			}
		}
	}
	// The message as JSON: the entry with its row change decoded in place of its bytes.
	entry, err := protojson.Marshal(&e)
	if err != nil {
		return Row{}, nil, err
	}
	change, err := protojson.Marshal(&rc)
	if err != nil {
		return Row{}, nil, err
	}
	doc := append([]byte(`{"entry":`), entry...)
	doc = append(append(append(doc, `,"rowChange":`...), change...), '}')
	return r, doc, nil
}

// canalRow is head (the entry's table, type and position) with rd's images.
func canalRow(head Row, rd *canalpb.RowData) Row {
	r := head
	cols := rd.GetAfterColumns()
	if r.Type == rowenc.TypeDelete {
		cols = rd.GetBeforeColumns()
	}
	r.Data, r.PK = canalColumnsJSON(cols, func(*canalpb.Column) bool { return true }), canalColumnsJSON(cols, (*canalpb.Column).GetIsKey)
	if r.Type == rowenc.TypeUpdate {
		changed := map[string]bool{}
		for _, c := range rd.GetAfterColumns() {
			changed[c.GetName()] = c.GetUpdated()
		}
		r.Old = canalColumnsJSON(rd.GetBeforeColumns(), func(c *canalpb.Column) bool { return changed[c.GetName()] })
	}
	return r
}

// canalColumnsJSON is the columns keep takes as a JSON object of Canal's text values.
func canalColumnsJSON(cols []*canalpb.Column, keep func(*canalpb.Column) bool) json.RawMessage {
	out := []byte{'{'}
	n := 0
	for _, c := range cols {
		if !keep(c) {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(jsonenc.AppendString(out, c.GetName()), ':')
		if c.GetIsNull() {
			out = append(out, "null"...)
		} else {
			out = jsonenc.AppendString(out, c.GetValue())
		}
	}
	return append(out, '}')
}
