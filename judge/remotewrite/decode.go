// Package remotewrite reads Prometheus remote-write 1.0 requests (a snappy-compressed
// protobuf WriteRequest, as Prometheus, vmagent or an OpenTelemetry collector send them)
// and maps node_exporter's series onto the judge's canonical metrics (nodeexporter.go),
// so that a fleet already scraped by Prometheus feeds the judge without BinLake's agent.
package remotewrite

import (
	"errors"
	"fmt"
	"math"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Sentinel errors; every error of Decode wraps one of them.
var (
	ErrInvalid     = errors.New("invalid remote-write request")
	ErrTooLarge    = errors.New("remote-write request too large")
	ErrUnsupported = errors.New("unsupported remote-write message")
)

// Limits bound one request after decompression; a zero field takes its default.
type Limits struct {
	MaxDecodedBytes int // default 32 MiB
	MaxSamples      int // default 500,000 (Prometheus sends at most 2,000 a request by default)
	MaxLabels       int // per series, default 64
}

func (l Limits) withDefaults() Limits {
	if l.MaxDecodedBytes <= 0 {
		l.MaxDecodedBytes = 32 << 20
	}
	if l.MaxSamples <= 0 {
		l.MaxSamples = 500_000
	}
	if l.MaxLabels <= 0 {
		l.MaxLabels = 64
	}
	return l
}

// Request is a decoded WriteRequest: its series, and how many metadata entries it held
// (Prometheus sends metadata-only requests every minute; they carry no samples).
type Request struct {
	Series   []Series
	Metadata int
}

// Series is one time series: its labels (__name__ among them) and samples.
type Series struct {
	Labels  []Label
	Samples []Sample
}

// Label is one label pair.
type Label struct{ Name, Value string }

// Sample is one value at a time in milliseconds since the Unix epoch.
type Sample struct {
	Value       float64
	TimestampMs int64
}

// Get returns the value of label name, or "".
func (s *Series) Get(name string) string {
	for _, l := range s.Labels {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// Decode decompresses and parses a remote-write 1.0 body. Exemplars and native
// histograms are skipped; metadata is only counted.
func Decode(body []byte, lim Limits) (Request, error) {
	lim = lim.withDefaults()
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return Request{}, fmt.Errorf("%w: not snappy-compressed: %v", ErrInvalid, err)
	}
	if n > lim.MaxDecodedBytes {
		return Request{}, fmt.Errorf("%w: %d bytes decompressed, limit %d", ErrTooLarge, n, lim.MaxDecodedBytes)
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return Request{}, fmt.Errorf("%w: snappy: %v", ErrInvalid, err)
	}
	d := decoder{lim: lim}
	req, err := d.writeRequest(raw)
	if err != nil {
		return Request{}, err
	}
	return req, nil
}

type decoder struct {
	lim     Limits
	samples int
}

// fields walks the fields of one message, calling f with each field's number, wire type
// and, for length-delimited fields, its bytes (v for varint and fixed64).
func fields(b []byte, what string, f func(num protowire.Number, typ protowire.Type, bytes []byte, v uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %s: bad field tag: %v", ErrInvalid, what, protowire.ParseError(n))
		}
		b = b[n:]
		var (
			val   []byte
			v     uint64
			taken int
		)
		switch typ {
		case protowire.BytesType:
			val, taken = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			v, taken = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			v, taken = protowire.ConsumeFixed64(b)
		default:
			taken = protowire.ConsumeFieldValue(num, typ, b)
		}
		if taken < 0 {
			return fmt.Errorf("%w: %s: field %d: %v", ErrInvalid, what, num, protowire.ParseError(taken))
		}
		b = b[taken:]
		if err := f(num, typ, val, v); err != nil {
			return err
		}
	}
	return nil
}

func wrongType(what string, num protowire.Number, typ protowire.Type) error {
	return fmt.Errorf("%w: %s: field %d has wire type %d", ErrInvalid, what, num, typ)
}

func (d *decoder) writeRequest(b []byte) (Request, error) {
	var req Request
	err := fields(b, "WriteRequest", func(num protowire.Number, typ protowire.Type, val []byte, _ uint64) error {
		switch num {
		case 1: // timeseries
			if typ != protowire.BytesType {
				return wrongType("WriteRequest", num, typ)
			}
			s, err := d.series(val)
			if err != nil {
				return err
			}
			req.Series = append(req.Series, s)
		case 3: // metadata
			if typ != protowire.BytesType {
				return wrongType("WriteRequest", num, typ)
			}
			req.Metadata++
		}
		return nil
	})
	return req, err
}

func (d *decoder) series(b []byte) (Series, error) {
	var s Series
	err := fields(b, "TimeSeries", func(num protowire.Number, typ protowire.Type, val []byte, _ uint64) error {
		switch num {
		case 1: // labels
			if typ != protowire.BytesType {
				return wrongType("TimeSeries", num, typ)
			}
			if len(s.Labels) == d.lim.MaxLabels {
				return fmt.Errorf("%w: a series has more than %d labels", ErrTooLarge, d.lim.MaxLabels)
			}
			l, err := label(val)
			if err != nil {
				return err
			}
			s.Labels = append(s.Labels, l)
		case 2: // samples
			if typ != protowire.BytesType {
				return wrongType("TimeSeries", num, typ)
			}
			if d.samples++; d.samples > d.lim.MaxSamples {
				return fmt.Errorf("%w: more than %d samples", ErrTooLarge, d.lim.MaxSamples)
			}
			smp, err := sample(val)
			if err != nil {
				return err
			}
			s.Samples = append(s.Samples, smp)
		}
		return nil
	})
	return s, err
}

func label(b []byte) (Label, error) {
	var l Label
	err := fields(b, "Label", func(num protowire.Number, typ protowire.Type, val []byte, _ uint64) error {
		if num != 1 && num != 2 {
			return nil
		}
		if typ != protowire.BytesType {
			return wrongType("Label", num, typ)
		}
		if num == 1 {
			l.Name = string(val)
		} else {
			l.Value = string(val)
		}
		return nil
	})
	return l, err
}

func sample(b []byte) (Sample, error) {
	var s Sample
	err := fields(b, "Sample", func(num protowire.Number, typ protowire.Type, _ []byte, v uint64) error {
		switch num {
		case 1:
			if typ != protowire.Fixed64Type {
				return wrongType("Sample", num, typ)
			}
			s.Value = math.Float64frombits(v)
		case 2:
			if typ != protowire.VarintType {
				return wrongType("Sample", num, typ)
			}
			s.TimestampMs = int64(v)
		}
		return nil
	})
	return s, err
}

// Encode is the inverse of Decode: a snappy-compressed WriteRequest holding series (no
// metadata). The bench command and the tests send what Prometheus would with it.
func Encode(series []Series) []byte {
	var b []byte
	for _, s := range series {
		var ts []byte
		for _, l := range s.Labels {
			var lb []byte
			lb = protowire.AppendTag(lb, 1, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Name)
			lb = protowire.AppendTag(lb, 2, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Value)
			ts = protowire.AppendTag(ts, 1, protowire.BytesType)
			ts = protowire.AppendBytes(ts, lb)
		}
		for _, smp := range s.Samples {
			var sb []byte
			sb = protowire.AppendTag(sb, 1, protowire.Fixed64Type)
			sb = protowire.AppendFixed64(sb, math.Float64bits(smp.Value))
			sb = protowire.AppendTag(sb, 2, protowire.VarintType)
			sb = protowire.AppendVarint(sb, uint64(smp.TimestampMs))
			ts = protowire.AppendTag(ts, 2, protowire.BytesType)
			ts = protowire.AppendBytes(ts, sb)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, ts)
	}
	return snappy.Encode(nil, b)
}
