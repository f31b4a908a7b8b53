package judge

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/binlake/binlake/internal/jsonenc"
	"github.com/binlake/binlake/judge/api"
	"github.com/binlake/binlake/lbplugins"
)

// answerBufs recycle the buffers placement answers are appended into.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// appendAnswer appends a placement answer as JSON (judge/api/openapi.json,
// PlacementAnswer). It is written by hand because the answer is the judge's hottest
// output: encoding/json's reflection cost as much as the decision itself.
func appendAnswer(b []byte, a *PlacementAnswer) []byte {
	b = append(b, `{"node":`...)
	b = jsonenc.AppendString(b, a.Node)
	b = append(b, `,"algorithm":`...)
	b = jsonenc.AppendString(b, a.Algorithm)
	b = append(b, `,"data_as_of":`...)
	b = appendTime(b, a.DataAsOf)
	b = append(b, `,"candidates":`...)
	b = strconv.AppendInt(b, int64(a.Candidates), 10)
	b = append(b, `,"scores":[`...)
	for i := range a.Scores {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendScore(b, &a.Scores[i])
	}
	b = append(b, `],"filtered":`...)
	b = appendCounts(b, a.FilteredBy)
	if a.Filtered != nil {
		b = append(b, `,"filtered_nodes":[`...)
		for i, f := range a.Filtered {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"node":`...)
			b = jsonenc.AppendString(b, f.Node)
			b = append(b, `,"reason":`...)
			b = jsonenc.AppendString(b, f.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r := a.Reservation; r != nil {
		b = append(b, `,"reservation":{"instance":`...)
		b = jsonenc.AppendString(b, r.Instance)
		b = append(b, `,"node":`...)
		b = jsonenc.AppendString(b, r.Node)
		b = append(b, `,"at":`...)
		b = appendTime(b, r.At)
		b = append(b, `,"expires_at":`...)
		b = appendTime(b, r.ExpiresAt)
		if r.Target > 0 {
			b = append(b, `,"target_instances":`...)
			b = lbplugins.AppendJSONFloat(b, r.Target)
		}
		if r.Expected != (api.Work{}) {
			b = append(b, `,"expected":`...)
			b = appendWork(b, r.Expected)
		}
		if r.Cores > 0 {
			b = append(b, `,"cores":`...)
			b = lbplugins.AppendJSONFloat(b, r.Cores)
		}
		b = append(b, '}')
	}
	if e := a.Expected; e != nil {
		b = append(b, `,"expected":`...)
		b = appendWork(b, e.Work)
		b = b[:len(b)-1] // reopen the object for the source and the note
		b = append(b, `,"source":`...)
		b = jsonenc.AppendString(b, e.Source)
		if e.Note != "" {
			b = append(b, `,"note":`...)
			b = jsonenc.AppendString(b, e.Note)
		}
		b = append(b, '}')
	}
	if a.Note != "" {
		b = append(b, `,"note":`...)
		b = jsonenc.AppendString(b, a.Note)
	}
	if c := a.InstanceCost; c != nil {
		b = append(b, `,"instance_cost":`...)
		cb, _ := json.Marshal(c) // explain "all" only: off the hot path
		b = append(b, cb...)
	}
	return append(b, '}', '\n')
}

// appendWork appends an instance's work as a JSON object.
func appendWork(b []byte, w api.Work) []byte {
	b = append(b, `{"rows_per_s":`...)
	b = lbplugins.AppendJSONFloat(b, w.RowsPerS)
	b = append(b, `,"bytes_per_s":`...)
	b = lbplugins.AppendJSONFloat(b, w.BytesPerS)
	if w.BinlogBytesPerS != 0 { // omitempty, as encoding/json writes it
		b = append(b, `,"binlog_bytes_per_s":`...)
		b = lbplugins.AppendJSONFloat(b, w.BinlogBytesPerS)
	}
	return append(b, '}')
}

func appendScore(b []byte, s *lbplugins.Score) []byte {
	b = append(b, `{"node":`...)
	b = jsonenc.AppendString(b, s.Node)
	b = append(b, `,"score":`...)
	b = lbplugins.AppendJSONFloat(b, s.Value)
	b = append(b, `,"parts":`...)
	b = s.Parts.AppendJSON(b)
	if s.Pending > 0 {
		b = append(b, `,"pending":`...)
		b = lbplugins.AppendJSONFloat(b, s.Pending)
	}
	return append(b, '}')
}

func appendCounts(b []byte, c lbplugins.FilterCounts) []byte {
	b = append(b, '{')
	first := true
	for _, kv := range [...]struct {
		key string
		n   int
	}{{"excluded", c.Excluded}, {"stale", c.Stale}, {"no_wave", c.NoWave}, {"wave_stopped", c.WaveStopped}, {"no_data", c.NoData},
		{"over_threshold", c.OverThreshold}, {"plugin", c.Plugin}} {
		if kv.n == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, kv.key...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(kv.n), 10)
	}
	return append(b, '}')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
