package capture

import (
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// ErrRowImagePartial is the fatal error of an instance that met a rows event of a
// subscribed table logged without every column (binlog_row_image MINIMAL or NOBLOB, for
// the server or a session) while on_unreadable is "stop": a message carries whole rows,
// and a column the binlog left out would read as NULL (an insert's defaults, an update's
// unchanged columns), its key as null, so that the row's changes lost their order.
var ErrRowImagePartial = errors.New("rows logged without every column (binlog_row_image is not FULL)")

// partialRows handles a rows event of table t whose images lack columns: the instance
// stops naming the table, the position and the columns logged, or, with on_unreadable:
// skip, the event's rows are logged, counted and dropped.
func (c *Capture) partialRows(h *replication.EventHeader, t *rowenc.Table, typ string, e *replication.RowsEvent) error {
	n := int(e.ColumnCount)
	image, logged := "before", setBits(e.ColumnBitmap1, n)
	switch {
	case typ == rowenc.TypeInsert:
		image = "after"
	case e.ColumnBitmap2 != nil && setBits(e.ColumnBitmap2, n) < logged:
		image, logged = "after", setBits(e.ColumnBitmap2, n)
	}
	if c.Inst.OnUnreadable == cluster.UnreadableSkip {
		c.Log.Warn("rows logged without every column: skipped, not published (on_unreadable: skip); the source should log binlog_row_image=FULL",
			"table", t.Database+"."+t.Name, "type", typ, "image", image, "columns_logged", logged, "columns", n, "file", c.file, "pos", h.LogPos)
		if c.OnUnreadable != nil {
			c.OnUnreadable()
		}
		return nil
	}
	return &fatalError{fmt.Errorf("%w: %s of %s.%s at %s:%d logs %d of the table's %d columns in its %s image: the wave publishes whole rows "+
		"(a column left out would read as NULL); set binlog_row_image=FULL on the source (a session may set MINIMAL or NOBLOB for its own "+
		"changes), exclude the table from the instance's subscriptions if its rows are not wanted, or on_unreadable: skip to drop such changes",
		ErrRowImagePartial, typ, t.Database, t.Name, c.file, h.LogPos, logged, n, image)}
}

// setBits counts the set bits among the first n of bitmap.
func setBits(bitmap []byte, n int) int {
	count := 0
	for i := 0; i < n && i/8 < len(bitmap); i++ {
		count += int(bitmap[i/8] >> (i % 8) & 1)
	}
	return count
}
