package tail_test

import (
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/rowenc"
)

// ordersTable is shop.orders as the capture knows it.
func ordersTable() *rowenc.Table {
	t := &rowenc.Table{Database: "shop", Name: "orders", PK: []int{0},
		Columns: []rowenc.Column{
			{Name: "id", Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true, PK: true},
			{Name: "amount", Type: mysql.MYSQL_TYPE_NEWDECIMAL},
			{Name: "note", Type: mysql.MYSQL_TYPE_VARCHAR},
		}}
	t.Prepare()
	return t
}

// sampleMessages are one transaction of three rows (an insert, an update, a delete: the
// last carries commit), then a ddl, encoded and keyed as the wave does, on topic
// binlake.rows partition 0 at offsets 0…3.
func sampleMessages(t testing.TB) []bus.Message {
	t.Helper()
	tb := ordersTable()
	m := rowenc.Meta{Instance: "orders", TS: 1764424800, GTID: "0-1-202", File: "bin.000001", Pos: 1234}
	commit := m
	commit.Commit, commit.XID = true, 88
	row := func(typ string, meta rowenc.Meta, before, after []any) bus.Message {
		v, err := rowenc.EncodeRow(nil, tb, typ, meta, before, after)
		if err != nil {
			t.Fatal(err)
		}
		image := after
		if image == nil {
			image = before
		}
		return bus.Message{Topic: "binlake.rows", Key: rowenc.AppendKey(nil, tb, rowenc.PartitionPK, image), Value: v}
	}
	ddlMeta := rowenc.Meta{Instance: "orders", TS: 1764424801, GTID: "0-1-203", File: "bin.000001", Pos: 1500, Commit: true}
	msgs := []bus.Message{
		row(rowenc.TypeInsert, m, nil, []any{uint64(7), "1.50", "ü <new>"}),
		row(rowenc.TypeUpdate, m, []any{uint64(8), "2.00", "a"}, []any{uint64(8), "2.50", "b"}),
		row(rowenc.TypeDelete, commit, []any{uint64(9), "3.00", nil}, nil),
		{Topic: "binlake.rows", Key: []byte("shop.orders"), Value: rowenc.EncodeDDL(nil, "shop", "orders", ddlMeta, "ALTER TABLE orders\n  ADD c INT")},
	}
	at := time.Date(2026, 11, 29, 14, 0, 0, 123e6, time.UTC)
	for i := range msgs {
		msgs[i].Offset = int64(i)
		msgs[i].Time = at.Add(time.Duration(i) * time.Millisecond)
	}
	return msgs
}
