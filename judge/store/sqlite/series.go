package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/binlake/binlake/internal/metric"
	"github.com/binlake/binlake/judge/store"
)

// seriesKey is a series' identity: node, metric name and metric.LabelSetKey of its labels.
type seriesKey struct{ node, name, labels string }

// seriesIDs caches the series table in memory (tens of bytes per series), so that a write
// binds one integer per point instead of three strings and needs no lookup in the file.
// An id enters the cache only once the transaction that created or found it committed.
type seriesIDs struct {
	mu  sync.Mutex
	ids map[seriesKey]int64
}

func (c *seriesIDs) load(db *sql.DB) error {
	rows, err := db.Query(`SELECT id, node, name, labels FROM series`)
	if err != nil {
		return fmt.Errorf("load series: %w", err)
	}
	defer rows.Close()
	ids := map[seriesKey]int64{}
	for rows.Next() {
		var k seriesKey
		var id int64
		if err := rows.Scan(&id, &k.node, &k.name, &k.labels); err != nil {
			return fmt.Errorf("load series: %w", err)
		}
		ids[k] = id
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load series: %w", err)
	}
	c.mu.Lock()
	c.ids = ids
	c.mu.Unlock()
	return nil
}

// remember adds ids found or created by a committed transaction.
func (c *seriesIDs) remember(found map[seriesKey]int64) {
	if len(found) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, id := range found {
		c.ids[k] = id
	}
}

// row is one point to insert: its series id, time and value.
type row struct {
	id, ms int64
	v      float64
}

// rows are the points of one write.
type rows struct {
	rows []row
	// missing lists, per series not in the cache, the positions of its rows.
	missing map[seriesKey][]int
}

// resolve turns points into rows, with the cached series ids.
func (c *seriesIDs) resolve(points []store.Point) rows {
	r := rows{rows: make([]row, len(points))}
	var lk metric.LabelSetKeys
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range points {
		k := seriesKey{p.Node, p.Name, lk.Of(p.Labels)}
		id, ok := c.ids[k]
		if !ok {
			if r.missing == nil {
				r.missing = map[seriesKey][]int{}
			}
			r.missing[k] = append(r.missing[k], i)
		}
		r.rows[i] = row{id, p.TS.UnixMilli(), p.Value}
	}
	return r
}

// createSeries inserts, in tx, the series that resolve did not know, with the ids after
// the largest in the table, through the prepared multi-row INSERTs (a query per new
// series was most of a write's time while a fleet's series were new); fills their ids
// into the rows and returns them, for remember once tx has committed. Should a series be
// in the file after all (another program wrote it), the insert fails and findSeries
// takes its id, and those of the rest, one by one.
func (r rows) createSeries(ctx context.Context, tx *sql.Tx, ins *batchInsert) (map[seriesKey]int64, error) {
	if len(r.missing) == 0 {
		return nil, nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM series`).Scan(&last); err != nil {
		return nil, fmt.Errorf("sqlite store: largest series id: %w", err)
	}
	keys := make([]seriesKey, 0, len(r.missing))
	for k := range r.missing {
		keys = append(keys, k)
	}
	err := ins.exec(ctx, tx, len(keys), func(dst []any, i int) []any {
		return append(dst, last+1+int64(i), keys[i].node, keys[i].name, keys[i].labels)
	})
	if err != nil {
		return r.findSeries(ctx, tx)
	}
	found := make(map[seriesKey]int64, len(keys))
	for i, k := range keys {
		id := last + 1 + int64(i)
		for _, at := range r.missing[k] {
			r.rows[at].id = id
		}
		found[k] = id
	}
	return found, nil
}

// findSeries finds or inserts, in tx, the series that resolve did not know, one by one.
func (r rows) findSeries(ctx context.Context, tx *sql.Tx) (map[seriesKey]int64, error) {
	found := make(map[seriesKey]int64, len(r.missing))
	// The no-op update makes RETURNING answer for an existing row too.
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO series (node, name, labels) VALUES (?, ?, ?)
		ON CONFLICT (node, name, labels) DO UPDATE SET node = excluded.node RETURNING id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: prepare series insert: %w", err)
	}
	defer stmt.Close()
	for k, at := range r.missing {
		var id int64
		if err := stmt.QueryRowContext(ctx, k.node, k.name, k.labels).Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite store: series %s/%s%s: %w", k.node, k.name, k.labels, err)
		}
		for _, i := range at {
			r.rows[i].id = id
		}
		found[k] = id
	}
	return found, nil
}
