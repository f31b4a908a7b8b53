package metric

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// designExample is the batch from docs/design.md, "Data contracts", verbatim.
const designExample = `{"node":"wave-3","ts":"2026-11-29T14:00:00Z","interval_s":10,"points":[{"name":"cpu.util","value":37.5},{"name":"wave.tps","value":1200,"labels":{"instance":"orders"}}]}`

var exampleTS = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

func TestDecodeDesignExample(t *testing.T) {
	b, err := Decode([]byte(designExample))
	require.NoError(t, err)
	require.Equal(t, Batch{
		Node: "wave-3", TS: exampleTS, IntervalS: 10,
		Points: []Point{
			{Name: CPUUtil, Value: 37.5},
			{Name: WaveTPS, Value: 1200, Labels: map[string]string{"instance": "orders"}},
		},
	}, b)
	// Encode is canonical: the design example is already in canonical form.
	out, err := Encode(b)
	require.NoError(t, err)
	require.Equal(t, designExample, string(out))
}

// batchJSON builds a batch document with the given points JSON, for the table below.
func batchJSON(points string) string {
	return `{"node":"n1","ts":"2026-01-02T03:04:05Z","interval_s":10,"points":[` + points + `]}`
}

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Batch
	}{
		{
			name: "whitespace, field order, offsets and fractions",
			in:   " \n\t{ \"points\" : [ { \"value\" : -1.5e3 , \"name\" : \"a.b_c\" } ] ,\r\n \"interval_s\" : 0.5, \"ts\" : \"2026-01-02T05:04:05.123456789+02:00\", \"node\":\"n\" } \n",
			want: Batch{Node: "n", TS: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), IntervalS: 0.5,
				Points: []Point{{Name: "a.b_c", Value: -1500}}},
		},
		{
			name: "empty points",
			in:   `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":1,"points":[]}`,
			want: Batch{Node: "n", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), IntervalS: 1, Points: []Point{}},
		},
		{
			name: "null points and labels, as encoding/json writes nil",
			in:   `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":1,"points":null}`,
			want: Batch{Node: "n", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), IntervalS: 1, Points: []Point{}},
		},
		{
			name: "empty and null labels decode to nil",
			in:   batchJSON(`{"name":"x","value":1,"labels":{}},{"name":"y","value":2,"labels":null}`),
			want: Batch{Node: "n1", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), IntervalS: 10,
				Points: []Point{{Name: "x", Value: 1}, {Name: "y", Value: 2}}},
		},
		{
			name: "escapes and unicode in node and label values",
			in:   `{"node":"w\u00e9ve-\ud83d\ude00\/\"q\"","ts":"2026-01-02T03:04:05Z","interval_s":10,"points":[{"name":"x","value":0,"labels":{"path":"/var/lib/é","k2":"a\\b"}}]}`,
			want: Batch{Node: "wéve-😀/\"q\"", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), IntervalS: 10,
				Points: []Point{{Name: "x", Value: 0, Labels: map[string]string{"path": "/var/lib/é", "k2": `a\b`}}}},
		},
		{
			name: "big and tiny numbers",
			in:   batchJSON(`{"name":"a","value":123456789012345678901234},{"name":"b","value":1E-300},{"name":"c","value":-0},{"name":"d","value":999999999999999}`),
			want: Batch{Node: "n1", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), IntervalS: 10,
				Points: []Point{{Name: "a", Value: 1.2345678901234568e23}, {Name: "b", Value: 1e-300}, {Name: "c", Value: 0}, {Name: "d", Value: 999999999999999}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeInvalid(t *testing.T) {
	many := func(n int, p string) string { return batchJSON(strings.TrimSuffix(strings.Repeat(p+",", n), ",")) }
	labels := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":"v"`, i)
		}
		return batchJSON(`{"name":"x","value":1,"labels":{` + b.String() + `}}`)
	}
	tests := []struct {
		name    string
		in      string
		is      error
		wantErr string
	}{
		{"empty input", ``, ErrInvalid, "expected '{' at the start of the batch, found end of input"},
		{"not an object", `[1,2]`, ErrInvalid, "expected '{'"},
		{"top-level null", `null`, ErrInvalid, "expected '{'"},
		{"truncated", designExample[:100], ErrInvalid, `point 0: expected ',' or '}' after field "value", found end of input`},
		{"truncated string", `{"node":"wav`, ErrInvalid, "unterminated string"},
		{"trailing data", designExample + `{}`, ErrInvalid, "unexpected data after the batch object"},
		{"trailing garbage", designExample + ` x`, ErrInvalid, "unexpected data after the batch object: 'x'"},
		{"unknown top-level field", `{"node":"n","host":"h"}`, ErrInvalid, `unknown field "host"`},
		{"field names are case-sensitive", `{"Node":"n"}`, ErrInvalid, `unknown field "Node"`},
		{"unknown point field names the point", batchJSON(`{"name":"a","value":1},{"name":"b","value":2,"unit":"s"}`), ErrInvalid, `point 1: unknown field "unit"`},
		{"duplicate field", `{"node":"a","node":"b"}`, ErrInvalid, `duplicate field "node"`},
		{"duplicate point field", batchJSON(`{"name":"a","value":1,"value":2}`), ErrInvalid, `point 0: duplicate field "value"`},
		{"duplicate label", batchJSON(`{"name":"a","value":1,"labels":{"k":"1","k":"2"}}`), ErrInvalid, `point 0: duplicate label "k"`},
		{"missing node", `{"ts":"2026-01-02T03:04:05Z","interval_s":10,"points":[]}`, ErrInvalid, `missing field "node"`},
		{"empty node", `{"node":"","ts":"2026-01-02T03:04:05Z","interval_s":10,"points":[]}`, ErrInvalid, "empty node"},
		{"node with newline", `{"node":"a\nb","ts":"2026-01-02T03:04:05Z","interval_s":10,"points":[]}`, ErrInvalid, "node: control character"},
		{"node not a string", `{"node":3}`, ErrInvalid, `field "node": expected a string, found '3'`},
		{"node too long", `{"node":"` + strings.Repeat("n", MaxNodeLen+1) + `","ts":"2026-01-02T03:04:05Z","interval_s":10,"points":[]}`, ErrInvalid, "node longer than"},
		{"missing ts", `{"node":"n","interval_s":10,"points":[]}`, ErrInvalid, `missing field "ts"`},
		{"zero ts", `{"node":"n","ts":"0001-01-01T00:00:00Z","interval_s":10,"points":[]}`, ErrInvalid, "missing or zero ts"},
		{"epoch ts", `{"node":"n","ts":"1970-01-01T00:00:00Z","interval_s":10,"points":[]}`, ErrInvalid, "ts 1970-01-01T00:00:00Z out of range"},
		{"ts beyond year 9999 in UTC", `{"node":"n","ts":"9999-12-31T23:00:00-05:00","interval_s":10,"points":[]}`, ErrInvalid, "out of range"},
		{"ts not RFC 3339", `{"node":"n","ts":"2026-01-02 03:04:05","interval_s":10,"points":[]}`, ErrInvalid, `field "ts": "2026-01-02 03:04:05" is not an RFC 3339 timestamp`},
		{"ts as number", `{"node":"n","ts":1764424800}`, ErrInvalid, `field "ts": expected an RFC 3339 string`},
		{"missing interval", `{"node":"n","ts":"2026-01-02T03:04:05Z","points":[]}`, ErrInvalid, `missing field "interval_s"`},
		{"zero interval", `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":0,"points":[]}`, ErrInvalid, "interval_s 0 must be positive"},
		{"negative interval", `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":-10,"points":[]}`, ErrInvalid, "interval_s -10 must be positive"},
		{"absurd interval", `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":1e9,"points":[]}`, ErrInvalid, "interval_s 1e+09 exceeds 86400"},
		{"interval as string", `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":"10s"}`, ErrInvalid, `field "interval_s": expected a number`},
		{"missing points", `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":10}`, ErrInvalid, `missing field "points"`},
		{"points not an array", `{"node":"n","ts":"2026-01-02T03:04:05Z","interval_s":10,"points":{}}`, ErrInvalid, `expected '[' for field "points"`},
		{"empty name", batchJSON(`{"name":"a","value":1},{"name":"b","value":1},{"name":"c","value":1},{"name":"","value":1}`), ErrInvalid, "point 3: empty name"},
		{"missing name", batchJSON(`{"value":1}`), ErrInvalid, `point 0: missing field "name"`},
		{"missing value", batchJSON(`{"name":"a"}`), ErrInvalid, `point 0: missing field "value"`},
		{"null value", batchJSON(`{"name":"a","value":null}`), ErrInvalid, `point 0: field "value": expected a number, found 'n'`},
		{"upper-case name", batchJSON(`{"name":"CPU.util","value":1}`), ErrInvalid, `point 0: invalid name "CPU.util"`},
		{"name with dash", batchJSON(`{"name":"cpu-util","value":1}`), ErrInvalid, `invalid name "cpu-util"`},
		{"name with empty segment", batchJSON(`{"name":"cpu..util","value":1}`), ErrInvalid, `invalid name "cpu..util"`},
		{"name starting with a digit", batchJSON(`{"name":"1cpu","value":1}`), ErrInvalid, `invalid name "1cpu"`},
		{"name too long", batchJSON(`{"name":"` + strings.Repeat("a", MaxNameLen+1) + `","value":1}`), ErrInvalid, "invalid name"},
		{"NaN literal", batchJSON(`{"name":"a","value":NaN}`), ErrInvalid, `field "value": expected a number, found 'N'`},
		{"Infinity literal", batchJSON(`{"name":"a","value":-Infinity}`), ErrInvalid, `field "value": malformed number`},
		{"number overflows to Inf", batchJSON(`{"name":"a","value":1e999}`), ErrInvalid, `field "value": number 1e999 out of range`},
		{"leading zero", batchJSON(`{"name":"a","value":01}`), ErrInvalid, "leading zero"},
		{"trailing dot", batchJSON(`{"name":"a","value":1.}`), ErrInvalid, "no digits after '.'"},
		{"plus sign", batchJSON(`{"name":"a","value":+1}`), ErrInvalid, "expected a number, found '+'"},
		{"empty label key", batchJSON(`{"name":"a","value":1,"labels":{"":"v"}}`), ErrInvalid, "point 0: a: empty label key"},
		{"label key with dot", batchJSON(`{"name":"a","value":1,"labels":{"a.b":"v"}}`), ErrInvalid, `invalid label key "a.b"`},
		{"label value not a string", batchJSON(`{"name":"a","value":1,"labels":{"k":1}}`), ErrInvalid, `label "k": value must be a string`},
		{"too many labels", labels(MaxLabels + 1), ErrInvalid, "more than 32 labels"},
		{"label value too long", batchJSON(`{"name":"a","value":1,"labels":{"k":"` + strings.Repeat("v", MaxLabelValueLen+1) + `"}}`), ErrInvalid, `label "k": value longer than`},
		{"raw control character", "{\"node\":\"a\x01\"}", ErrInvalid, "control character 0x01 in string"},
		{"invalid UTF-8", "{\"node\":\"a\xff\"}", ErrInvalid, "invalid UTF-8"},
		{"lone surrogate", `{"node":"\ud800x"}`, ErrInvalid, `lone UTF-16 surrogate \ud800`},
		{"bad escape", `{"node":"\x"}`, ErrInvalid, `invalid escape '\x'`},
		{"short unicode escape", `{"node":"\u12"}`, ErrInvalid, `malformed \u escape`},
		{"missing colon", `{"node" "n"}`, ErrInvalid, "expected ':' after field name, found '\"'"},
		{"trailing comma", `{"node":"n",}`, ErrInvalid, "expected a field name, found '}'"},
		{"trailing comma in points", batchJSON(`{"name":"a","value":1},`), ErrInvalid, "point 1: expected '{' at the start of a point, found ']'"},
		{"too many points", many(MaxPoints+1, `{"name":"a","value":1}`), ErrTooLarge, "more than 10000 points"},
		{"too large", `{"node":"` + strings.Repeat("n", MaxBatchBytes) + `"}`, ErrTooLarge, "more than 1048576"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			require.Error(t, err)
			require.ErrorIs(t, err, tc.is)
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestEncodeValidates(t *testing.T) {
	good := Batch{Node: "n", TS: exampleTS, IntervalS: 10, Points: []Point{{Name: "a", Value: 1}}}
	tests := []struct {
		name    string
		mutate  func(*Batch)
		is      error
		wantErr string
	}{
		{"zero ts", func(b *Batch) { b.TS = time.Time{} }, ErrInvalid, "missing or zero ts"},
		{"NaN value", func(b *Batch) { b.Points[0].Value = math.NaN() }, ErrInvalid, "point 0: a: value is NaN"},
		{"Inf value", func(b *Batch) { b.Points[0].Value = math.Inf(-1) }, ErrInvalid, "point 0: a: value is infinite"},
		{"NaN interval", func(b *Batch) { b.IntervalS = math.NaN() }, ErrInvalid, "interval_s is not a finite number"},
		{"invalid UTF-8 label", func(b *Batch) { b.Points[0].Labels = map[string]string{"k": "\xff"} }, ErrInvalid, `label "k": invalid UTF-8`},
		{"empty node", func(b *Batch) { b.Node = "" }, ErrInvalid, "empty node"},
		{"too many points", func(b *Batch) { b.Points = make([]Point, MaxPoints+1) }, ErrTooLarge, "10001 points"},
		{"too large encoded", func(b *Batch) {
			b.Points = make([]Point, 2000)
			for i := range b.Points {
				b.Points[i] = Point{Name: "a", Value: 1, Labels: map[string]string{"k": strings.Repeat("v", 1000)}}
			}
		}, ErrTooLarge, "bytes encoded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := good
			b.Points = append([]Point(nil), good.Points...)
			tc.mutate(&b)
			_, err := Encode(b)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.wantErr)

			// AppendEncode refuses the same way and leaves what buf held.
			buf, err := AppendEncode([]byte("kept"), b)
			require.ErrorIs(t, err, tc.is)
			require.Equal(t, "kept", string(buf))
		})
	}
}

func TestRoundTrip(t *testing.T) {
	loc := time.FixedZone("X", -7*3600)
	in := Batch{
		Node: "wave-3 \"β\" \\ \u2028", TS: time.Date(2026, 3, 4, 5, 6, 7, 890, loc), IntervalS: 12.5,
		Points: []Point{
			{Name: CPUUtil, Value: 37.5},
			{Name: GoHeapBytes, Value: 1 << 40},
			{Name: "tiny", Value: 1e-9},
			{Name: "huge", Value: -1.7976931348623157e308},
			{Name: WaveLagSeconds, Value: 0.1, Labels: map[string]string{"instance": "orders", "b": "", "A_1": "quote\" back\\slash ünï"}},
		},
	}
	out, err := Encode(in)
	require.NoError(t, err)
	require.Contains(t, string(out), `"ts":"2026-03-04T12:06:07.00000089Z"`)
	require.True(t, json.Valid(out), string(out))

	got, err := Decode(out)
	require.NoError(t, err)
	require.True(t, got.TS.Equal(in.TS))
	require.Equal(t, time.UTC, got.TS.Location())
	want := in
	want.TS = in.TS.UTC()
	require.Equal(t, want, got)

	// encoding/json reads what Encode writes into the same values: the format is plain JSON.
	var viaStd Batch
	require.NoError(t, json.Unmarshal(out, &viaStd))
	require.Equal(t, want, viaStd)

	// Labels are written in key order, so equal batches give equal bytes.
	again, err := Encode(got)
	require.NoError(t, err)
	require.Equal(t, out, again)

	// AppendEncode writes the same bytes after what buf holds, into a reused buffer too.
	buf := []byte("prefix")
	for range 2 {
		buf, err = AppendEncode(buf[:len("prefix")], got)
		require.NoError(t, err)
		require.Equal(t, "prefix"+string(out), string(buf))
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{CPUUtil, Load1, Load5, Load15, MemUsedPct, NetRxBps, NetTxBps, DiskUsedPct,
		GoHeapBytes, GoGCPauseP99, GoGoroutines, WaveTPS, WaveInstances, WaveLagSeconds, WavePublishErrs, "a", "a1.b_2"} {
		require.True(t, ValidName(n), n)
	}
	for _, n := range []string{"", ".a", "a.", "a..b", "_a", "1a", "A", "a-b", "a b", "é", strings.Repeat("a", MaxNameLen+1)} {
		require.False(t, ValidName(n), n)
	}
}

func equalBatch(a, b Batch) bool {
	return a.TS.Equal(b.TS) && a.Node == b.Node && a.IntervalS == b.IntervalS && reflect.DeepEqual(a.Points, b.Points)
}

func FuzzDecode(f *testing.F) {
	seeds := []string{
		designExample,
		designExample[:len(designExample)/2],
		designExample[:len(designExample)-1],
		designExample + "x",
		batchJSON(`{"name":"a","value":-0.0e-0,"labels":{"k":"\u00e9\ud83d\ude00\n"}},{"name":"b","value":1e308}`),
		batchJSON(`{"name":"a","value":1,"labels":{"k":"\ud800"}}`),
		batchJSON(`{"name":"a","value":1,"labels":{}},{"name":"b","value":2,"labels":null},{"name":"c","value":3,"labels":{"k":"v"},"value":4}`),
		batchJSON(`{"name":"a","value":1,"labels":{"k":"v"}},{"name":"B","value":1,"labels":{"k":"v"}},{"name":"c","value":1,"labels":{"bad key":"v"}}`),
		batchJSON(`{"name":"a","value":1,"labels":{"k":"\u0001"}},{"name":"b","value":1,"labels":{"k":"v"}}`),
		batchJSON(`{"name":"a","value":1,"labels":{"0":"x","10":"y","a":"\u0001"}}`), // several bad labels: one error, always the same
		batchJSON(`{"name":"a\u0062","value":01},{"name":"","value":-},{"name":"d","value":1e999},{"name":"e","value":5 }`),
		`{"node":"n","ts":"2026-01-02T03:04:05.999999999+14:00","interval_s":86400,"points":null}`,
		`{"node":"n","ts":"9999-12-31T23:59:59Z","interval_s":1e-300,"points":[]}`,
		`{"node":"n","node":"n"}`,
		`{"Node":"n"}`,
		`[]`,
		``,
		`{`,
		`"\`,
		"{\"node\":\"\xff\"}",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// One Decoder across all inputs: what it remembers of earlier ones must never change
	// how a later one decodes.
	dec := NewDecoder()
	// DecodeInto's array: left holding the points of earlier inputs, which must never
	// show through.
	reuse := make([]Point, 0, 64)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		cb, cerr := dec.Decode(data)
		if fmt.Sprint(err) != fmt.Sprint(cerr) || err == nil && !equalBatch(b, cb) {
			t.Fatalf("Decoder disagrees with Decode on %q:\n%+v %v\n%+v %v", data, b, err, cb, cerr)
		}
		ib, ierr := dec.DecodeInto(data, reuse)
		if fmt.Sprint(err) != fmt.Sprint(ierr) || err == nil && !equalBatch(b, ib) {
			t.Fatalf("DecodeInto disagrees with Decode on %q:\n%+v %v\n%+v %v", data, b, err, ib, ierr)
		}
		if ierr == nil && cap(ib.Points) == cap(reuse) && len(ib.Points) > 0 && &ib.Points[0] != &reuse[:1][0] {
			t.Fatalf("DecodeInto did not use the array it was given for %d points", len(ib.Points))
		}
		if ierr == nil && cap(ib.Points) <= cap(reuse) {
			reuse = ib.Points
		}
		// Points in Encode's shape take pointFast: the general rules must read the same.
		slowPoints = true
		sb, serr := Decode(data)
		slowPoints = false
		if fmt.Sprint(err) != fmt.Sprint(serr) || err == nil && !equalBatch(b, sb) {
			t.Fatalf("pointFast disagrees with the general rules on %q:\n%+v %v\n%+v %v", data, b, err, sb, serr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error wraps neither ErrInvalid nor ErrTooLarge: %v", err)
			}
			return
		}
		out, err := Encode(b)
		if err != nil {
			t.Fatalf("Decode accepted %q but Encode refused it: %v", data, err)
		}
		b2, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode refused Encode's output %q: %v", out, err)
		}
		if !equalBatch(b, b2) {
			t.Fatalf("round trip changed the batch:\n%+v\n%+v", b, b2)
		}
		// encoding/json must agree that the input was valid JSON.
		if !json.Valid(data) {
			t.Fatalf("Decode accepted invalid JSON %q", data)
		}
		if !bytes.Equal(out, mustEncode(t, b2)) {
			t.Fatalf("encoding is not deterministic")
		}
	})
}

func mustEncode(t testing.TB, b Batch) []byte {
	t.Helper()
	out, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A Decoder decodes a stream like Decode and shares what repeats: the names and label
// sets of the same agent's next batch are the very strings and maps of the previous one.
func TestDecoderRemembers(t *testing.T) {
	in := batchJSON(`{"name":"disk.read_bps","value":1,"labels":{"device":"sda"}},{"name":"disk.read_bps","value":2,"labels":{"device":"sdb"}}`)
	dec := NewDecoder()
	first, err := dec.Decode([]byte(in))
	require.NoError(t, err)
	want, err := Decode([]byte(in))
	require.NoError(t, err)
	require.True(t, equalBatch(want, first))
	second, err := dec.Decode([]byte(in))
	require.NoError(t, err)
	require.True(t, equalBatch(want, second))
	for i := range first.Points {
		require.Equal(t, reflect.ValueOf(first.Points[i].Labels).Pointer(), reflect.ValueOf(second.Points[i].Labels).Pointer(), "point %d: label set shared", i)
		require.Equal(t, unsafe.StringData(first.Points[i].Name), unsafe.StringData(second.Points[i].Name), "point %d: name shared", i)
	}
	// A label set with a different spelling is its own set; a bad one is still refused.
	_, err = dec.Decode([]byte(batchJSON(`{"name":"a","value":1,"labels":{"device":"sda","device":"sdb"}}`)))
	require.ErrorIs(t, err, ErrInvalid)
	other, err := dec.Decode([]byte(batchJSON(`{"name":"a","value":1,"labels":{"device":"sdc"}}`)))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"device": "sdc"}, other.Points[0].Labels)
}
