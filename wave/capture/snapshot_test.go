package capture

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

func TestBinlogReached(t *testing.T) {
	for _, tc := range []struct {
		at, end cluster.Position
		want    bool
	}{
		{cluster.Position{File: "bin.000002", Pos: 100}, cluster.Position{File: "bin.000002", Pos: 100}, true},
		{cluster.Position{File: "bin.000002", Pos: 99}, cluster.Position{File: "bin.000002", Pos: 100}, false},
		{cluster.Position{File: "bin.000003", Pos: 4}, cluster.Position{File: "bin.000002", Pos: 900}, true},
		{cluster.Position{File: "bin.000002", Pos: 900}, cluster.Position{File: "bin.000003", Pos: 4}, false},
		{cluster.Position{File: "bin.000010", Pos: 4}, cluster.Position{File: "bin.000009", Pos: 4}, true}, // by number, not text
		{cluster.Position{}, cluster.Position{File: "bin.000001", Pos: 4}, false},                          // nothing read yet
	} {
		if got := binlogReached(tc.at, tc.end); got != tc.want {
			t.Errorf("binlogReached(%v, %v) = %v, want %v", tc.at, tc.end, got, tc.want)
		}
	}
}

// TestKeyValueRoundTrip: a resume key survives the offset's JSON with its type, so that
// the next chunk compares it as the server compared the original.
func TestKeyValueRoundTrip(t *testing.T) {
	str := mysql.NewFieldValue(mysql.FieldValueTypeString, 0, []byte("ü'\""))
	for _, tc := range []struct {
		fv   mysql.FieldValue
		col  rowenc.Column
		want string
	}{
		{mysql.NewFieldValue(mysql.FieldValueTypeSigned, uint64(math.MaxUint64-6), nil), rowenc.Column{}, "int64 -7"},
		{mysql.NewFieldValue(mysql.FieldValueTypeUnsigned, math.MaxUint64, nil), rowenc.Column{}, "uint64 18446744073709551615"},
		{mysql.NewFieldValue(mysql.FieldValueTypeFloat, math.Float64bits(2.5), nil), rowenc.Column{}, "float64 2.5"},
		{str, rowenc.Column{}, "string ü'\""},
		{str, rowenc.Column{Binary: true}, "[]uint8 [195 188 39 34]"},
	} {
		data, _ := json.Marshal([]cluster.KeyValue{keyValueOf(&tc.fv, &tc.col)})
		var back []cluster.KeyValue
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%T %v", back[0].Arg(), back[0].Arg()); got != tc.want {
			t.Errorf("%+v came back as %s, want %s (%s)", tc.fv, got, tc.want, data)
		}
	}
}

func TestAfterKey(t *testing.T) {
	one, two := int64(1), "b"
	for _, tc := range []struct {
		keys []string
		want string
		args int
	}{
		{[]string{"a"}, "a >= ? AND (a > ?)", 2},
		{[]string{"a", "b"}, "a >= ? AND (a > ? OR (a = ? AND (b > ?)))", 4},
		{[]string{"a", "d"}, "a >= ? AND (a > ? OR (a = ? AND (d > CAST(? AS DECIMAL(65,30)))))", 4},
		{[]string{"a", "b", "c"}, "a >= ? AND (a > ? OR (a = ? AND (b > ? OR (b = ? AND (c > ?)))))", 6},
	} {
		k := []cluster.KeyValue{{Int: &one}, {Text: &two}, {Int: &one}}[:len(tc.keys)]
		params := make([]string, len(tc.keys))
		for i, key := range tc.keys {
			params[i] = "?"
			if key == "d" {
				params[i] = "CAST(? AS DECIMAL(65,30))"
			}
		}
		got, args := afterKey(tc.keys, params, k)
		if got != tc.want || len(args) != tc.args {
			t.Errorf("%v: %q with %d args, want %q with %d", tc.keys, got, len(args), tc.want, tc.args)
		}
	}
}
