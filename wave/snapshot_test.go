package wave

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/rowenc"
)

func TestBinlogReached(t *testing.T) {
	for _, tc := range []struct {
		at, end Position
		want    bool
	}{
		{Position{File: "bin.000002", Pos: 100}, Position{File: "bin.000002", Pos: 100}, true},
		{Position{File: "bin.000002", Pos: 99}, Position{File: "bin.000002", Pos: 100}, false},
		{Position{File: "bin.000003", Pos: 4}, Position{File: "bin.000002", Pos: 900}, true},
		{Position{File: "bin.000002", Pos: 900}, Position{File: "bin.000003", Pos: 4}, false},
		{Position{File: "bin.000010", Pos: 4}, Position{File: "bin.000009", Pos: 4}, true}, // by number, not text
		{Position{}, Position{File: "bin.000001", Pos: 4}, false},                          // nothing read yet
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
		data, _ := json.Marshal([]KeyValue{keyValueOf(&tc.fv, &tc.col)})
		var back []KeyValue
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%T %v", back[0].arg(), back[0].arg()); got != tc.want {
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
		k := []KeyValue{{Int: &one}, {Text: &two}, {Int: &one}}[:len(tc.keys)]
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

func TestSnapshotOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o  SnapshotOptions
		ok bool
	}{
		{SnapshotOptions{}, true},
		{SnapshotOptions{Initial: true, ChunkRows: 1, RowsPerSecond: 1}, true},
		{SnapshotOptions{ChunkRows: maxSnapshotChunkRows + 1}, false},
		{SnapshotOptions{ChunkRows: -1}, false},
		{SnapshotOptions{RowsPerSecond: -1}, false},
	} {
		if err := tc.o.validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.o, err, tc.ok)
		}
	}
}

func TestSnapshotProgressSteps(t *testing.T) {
	p := &SnapshotProgress{Request: "r", Tables: []string{"d.a", "d.b"}, Rows: 10}
	one := int64(5)
	a := p.after([]KeyValue{{Int: &one}}, 3)
	if a.Rows != 13 || len(a.After) != 1 || len(p.After) != 0 {
		t.Fatalf("after: %+v (from %+v, which must not change)", a, p)
	}
	b := a.next(2)
	if b.Rows != 15 || b.After != nil || len(b.Tables) != 1 || b.Tables[0] != "d.b" || b.Done {
		t.Fatalf("next: %+v", b)
	}
	if c := b.next(0); !c.Done || len(c.Tables) != 0 {
		t.Fatalf("last next: %+v", c)
	}
}

// TestRequestSnapshot: `binlake instance snapshot` stores a request the leader finds, on
// both coordinators, and refuses what no snapshot could do.
func TestRequestSnapshot(t *testing.T) {
	for name, open := range adminCoordinators(t) {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			ctx := t.Context()
			inst := validInstance()
			inst.Subscriptions = []Subscription{
				{Name: "shop", Topic: "shop", Include: []string{`shop\..*`}},
				{Name: "deletes", Topic: "del", Include: []string{`audit\..*`}, Events: []string{rowenc.TypeDelete}},
			}
			if _, err := AddInstance(ctx, c, &inst, "wave-1", nil); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				id     string
				tables []string
				err    string
			}{
				{"nope", nil, "not found"},
				{inst.ID, []string{"shop"}, `table "shop": want db.table`},
				{inst.ID, []string{"other.t"}, `"other.t" is in no subscription`},
				{inst.ID, []string{"audit.t"}, `"audit.t" is in no subscription of instance "orders" that takes inserts`},
			} {
				if _, err := RequestSnapshot(ctx, c, tc.id, tc.tables); err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("RequestSnapshot(%s, %v): %v, want %q", tc.id, tc.tables, err, tc.err)
				}
			}
			if _, ok, err := readSnapshotRequest(ctx, c, inst.ID); ok || err != nil {
				t.Fatalf("a refused request was stored (ok %v, err %v)", ok, err)
			}
			first, err := RequestSnapshot(ctx, c, inst.ID, []string{"shop.orders"})
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := readSnapshotRequest(ctx, c, inst.ID)
			if err != nil || !ok || got.ID != first.ID || fmt.Sprint(got.Tables) != "[shop.orders]" {
				t.Fatalf("stored request %+v (ok %v, err %v), want %+v", got, ok, err, first)
			}
			second, err := RequestSnapshot(ctx, c, inst.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if second.ID == first.ID {
				t.Fatalf("two requests share the id %s: the leader would not run the second", first.ID)
			}
		})
	}
}
