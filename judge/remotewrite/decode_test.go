package remotewrite

import (
	"errors"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

func series(name string, labels map[string]string, samples ...Sample) Series {
	s := Series{Labels: []Label{{labelName, name}}, Samples: samples}
	for k, v := range labels {
		s.Labels = append(s.Labels, Label{k, v})
	}
	return s
}

func TestDecodeRoundTrip(t *testing.T) {
	in := []Series{
		series("node_load1", map[string]string{"instance": "h1:9100", "job": "node"}, Sample{0.5, 1_700_000_000_000}, Sample{0.75, 1_700_000_015_000}),
		series("up", map[string]string{"instance": "h1:9100"}, Sample{1, 1_700_000_000_000}),
	}
	req, err := Decode(Encode(in), Limits{})
	require.NoError(t, err)
	require.Equal(t, in, req.Series)
	require.Zero(t, req.Metadata)
}

// A metadata-only request (Prometheus sends one a minute) decodes to no series.
func TestDecodeMetadataOnly(t *testing.T) {
	var md []byte
	md = protowire.AppendTag(md, 2, protowire.BytesType) // metric_family_name
	md = protowire.AppendString(md, "node_load1")
	var b []byte
	for range 3 {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, md)
	}
	req, err := Decode(snappy.Encode(nil, b), Limits{})
	require.NoError(t, err)
	require.Empty(t, req.Series)
	require.Equal(t, 3, req.Metadata)
}

func TestDecodeRefuses(t *testing.T) {
	wrongType := protowire.AppendTag(nil, 1, protowire.VarintType)
	wrongType = protowire.AppendVarint(wrongType, 7)
	truncated := protowire.AppendTag(nil, 1, protowire.BytesType)
	truncated = protowire.AppendVarint(truncated, 100) // claims 100 bytes, has none
	many := make([]Sample, 11)
	for _, c := range []struct {
		name string
		body []byte
		lim  Limits
		want error
	}{
		{"not snappy", []byte("\xff\xff\xff\xff\xff\xff"), Limits{}, ErrInvalid},
		{"empty body", nil, Limits{}, ErrInvalid},
		{"wrong wire type", snappy.Encode(nil, wrongType), Limits{}, ErrInvalid},
		{"truncated", snappy.Encode(nil, truncated), Limits{}, ErrInvalid},
		{"decoded too large", Encode([]Series{series("x", nil, many...)}), Limits{MaxDecodedBytes: 64}, ErrTooLarge},
		{"too many samples", Encode([]Series{series("x", nil, many...)}), Limits{MaxSamples: 10}, ErrTooLarge},
		{"too many labels", Encode([]Series{series("x", map[string]string{"a": "1", "b": "2"})}), Limits{MaxLabels: 2}, ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.body, c.lim)
			require.Error(t, err)
			require.True(t, errors.Is(err, c.want), "%v, want %v", err, c.want)
		})
	}
}

// FuzzDecode: no input crashes Decode, and whatever it accepts encodes back to the same
// series.
func FuzzDecode(f *testing.F) {
	f.Add(Encode([]Series{series("node_load1", map[string]string{"instance": "h:9100"}, Sample{1.5, 1_700_000_000_000})}))
	f.Add(snappy.Encode(nil, []byte{0x1a, 0x00}))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Decode(body, Limits{MaxDecodedBytes: 1 << 16})
		if err != nil {
			return
		}
		again, err := Decode(Encode(req.Series), Limits{MaxDecodedBytes: 1 << 20})
		require.NoError(t, err)
		require.Equal(t, len(req.Series), len(again.Series))
		for i := range req.Series {
			require.Equal(t, req.Series[i].Labels, again.Series[i].Labels)
			require.Equal(t, len(req.Series[i].Samples), len(again.Series[i].Samples))
		}
	})
}
