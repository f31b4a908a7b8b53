package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/binlake/binlake/wave/rowenc"
)

func TestFilterMatch(t *testing.T) {
	f, err := NewFilter([]Subscription{
		{Name: "orders", Topic: "t.orders", Include: []string{`shop\.orders`}},
		{Name: "shop", Topic: "t.shop", Include: []string{`shop\..*`}, Exclude: []string{`shop\.tmp_.*`, `shop\.orders`}},
		{Name: "deletes", Topic: "t.del", Events: []string{rowenc.TypeDelete, rowenc.TypeDDL}},
		{Name: "two", Topic: "t.two", Include: []string{`a\.x`, `b\..*`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		db, table, typ string
		want           []int
	}{
		{"shop", "orders", rowenc.TypeInsert, []int{0}},
		{"shop", "orders", rowenc.TypeDelete, []int{0, 2}},      // a row matching two subscriptions goes to both
		{"shop", "orders_archive", rowenc.TypeInsert, []int{1}}, // include is anchored: shop\.orders is not a prefix match
		{"shop", "items", rowenc.TypeUpdate, []int{1}},
		{"shop", "tmp_x", rowenc.TypeInsert, nil},
		{"shop", "tmp_x", rowenc.TypeDDL, []int{2}},
		{"xshop", "items", rowenc.TypeInsert, nil},
		{"a", "x", rowenc.TypeInsert, []int{3}},
		{"a", "xy", rowenc.TypeInsert, nil},
		{"b", "anything", rowenc.TypeUpdate, []int{3}},
	}
	for _, tc := range tests {
		if got := f.Match(tc.db, tc.table, tc.typ); !slices.Equal(got, tc.want) {
			t.Errorf("Match(%s.%s, %s) = %v, want %v", tc.db, tc.table, tc.typ, got, tc.want)
		}
	}
	if got := f.Topics(); !slices.Equal(got, []string{"t.del", "t.orders", "t.shop", "t.two"}) {
		t.Errorf("Topics = %v", got)
	}
	if f.Subscription(0).PartitionBy != rowenc.PartitionPK {
		t.Errorf("default partitioning = %q, want pk", f.Subscription(0).PartitionBy)
	}
}

func TestSubscriptionErrors(t *testing.T) {
	tests := []struct {
		sub  Subscription
		want string
	}{
		{Subscription{Topic: "t"}, `field "name": required`},
		{Subscription{Name: "a", Topic: "bad topic"}, `field "topic": topic name "bad topic" has character ' '`},
		// Kafka refuses these two names although their characters are legal: the
		// instance was added and then retried for ever, its state saying bus_unreachable.
		{Subscription{Name: "a", Topic: "."}, `field "topic": topic name "." is not allowed`},
		{Subscription{Name: "a", Topic: ".."}, `field "topic": topic name ".." is not allowed`},
		{Subscription{Name: "a", Topic: "t", Include: []string{"("}}, `field "include[0]": "("`},
		// The pattern as written, not the anchored one it is compiled as.
		{Subscription{Name: "a", Topic: "t", Include: []string{"[abc"}}, "missing closing ]: `[abc`"},
		{Subscription{Name: "a", Topic: "t", Exclude: []string{""}}, `field "exclude[0]": empty pattern`},
		{Subscription{Name: "a", Topic: "t", Events: []string{"upsert"}}, `field "events[0]": "upsert"`},
		{Subscription{Name: "a", Topic: "t", PartitionBy: "row"}, `field "partition_by": "row"`},
		{Subscription{Name: "a", Topic: "t", Format: "avro"}, `format "avro": unknown; known formats: ` + strings.Join(rowenc.FormatNames(), ", ")},
		{Subscription{Name: "a", Topic: "t", FormatOptions: map[string]string{"schema": "true"}}, `format json: option "schema": the format has no options`},
	}
	for _, tc := range tests {
		_, err := compileSubscription(tc.sub)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.sub, err, tc.want)
		}
	}
}

// A subscription's problems all come at once, under its index in an instance: a bad
// format hid the include pattern's until it was fixed (an outside trial).
func TestSubscriptionErrorsAllAtOnce(t *testing.T) {
	in := Instance{ID: "i", Source: Source{Addr: "db:3306", User: "u", ServerID: 7},
		Subscriptions: []Subscription{{Name: "a", Topic: "t", Format: "avro", PartitionBy: "primary", Include: []string{"shop\\.(orders"}}}}
	err := in.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`field "subscriptions[0].partition_by": "primary"`,
		`field "subscriptions[0].format": format "avro": unknown`,
		`field "subscriptions[0].include[0]": "shop\\.(orders"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant it to say %s", err, want)
		}
	}
}

func TestParseSubscriptionFlag(t *testing.T) {
	s, err := ParseSubscriptionFlag(`orders=shop.orders:shop\.orders,shop\.order_items;exclude=shop\.tmp;events=insert,update;partition_by=table`)
	if err != nil {
		t.Fatal(err)
	}
	want := Subscription{Name: "orders", Topic: "shop.orders", Include: []string{`shop\.orders`, `shop\.order_items`},
		Exclude: []string{`shop\.tmp`}, Events: []string{"insert", "update"}, PartitionBy: "table"}
	if !slices.Equal(s.Include, want.Include) || !slices.Equal(s.Exclude, want.Exclude) || !slices.Equal(s.Events, want.Events) ||
		s.Name != want.Name || s.Topic != want.Topic || s.PartitionBy != want.PartitionBy {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if s, err := ParseSubscriptionFlag(`a=t:x;format=json`); err != nil || s.Format != rowenc.FormatJSON {
		t.Errorf("format=json: %+v, %v", s, err)
	}
	for _, bad := range []string{"", "=t", "a=t;x", "a=t;colour=red", "a=t:(", "a=:x", "a=t:x;format=avro"} {
		if _, err := ParseSubscriptionFlag(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseSubscriptionFlag: the parser and the compiled filter never panic, and what
// parses matches consistently.
func FuzzParseSubscriptionFlag(f *testing.F) {
	for _, s := range []string{`a=t:db\..*`, `a=t:x;events=delete;exclude=y`, `a=t:(`, `a=t:x;partition_by=pk`, "", ";;", `a=t:[a-`, `a=t:\`} {
		f.Add(s, "db", "table")
	}
	f.Fuzz(func(t *testing.T, spec, db, table string) {
		s, err := ParseSubscriptionFlag(spec)
		if err != nil {
			return
		}
		flt, err := NewFilter([]Subscription{s})
		if err != nil {
			t.Fatalf("parsed %q but the filter refuses it: %v", spec, err)
		}
		all := flt.Tables(db, table)
		for _, typ := range []string{rowenc.TypeInsert, rowenc.TypeUpdate, rowenc.TypeDelete, rowenc.TypeDDL} {
			for _, i := range flt.Match(db, table, typ) {
				if !slices.Contains(all, i) {
					t.Fatalf("Match(%s) returned %d outside Tables %v", typ, i, all)
				}
			}
		}
	})
}

// TestPositionString: a position reads as file:pos, with its GTID set when it has one,
// and a start by GTID alone as that set (it read ":0 gtid …").
func TestPositionString(t *testing.T) {
	for _, tc := range []struct {
		p    Position
		want string
	}{
		{Position{File: "binlog.000042", Pos: 1234}, "binlog.000042:1234"},
		{Position{File: "binlog.000042", Pos: 1234, GTIDSet: "0-1-1200"}, "binlog.000042:1234 gtid 0-1-1200"},
		{Position{GTIDSet: "0-11-8349"}, "gtid 0-11-8349"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}
