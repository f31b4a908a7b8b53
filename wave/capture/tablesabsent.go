package capture

import (
	"context"
	"fmt"
	"time"

	"github.com/binlake/binlake/wave/cluster"
)

// AbsentTables returns the tables ("db.table") of tables that src does not show its user:
// gone, misspelt, or out of the user's sight (a snapshot cannot read those either). A
// name that is not db.table is left to the caller to refuse. It asks information_schema,
// which lists only what the user may see, over one connection.
func AbsentTables(ctx context.Context, src cluster.Source, password string, tables []string) ([]string, error) {
	ep, err := EndpointOf(src, password)
	if err != nil {
		return nil, err
	}
	conn, err := ep.connect(ctx, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ep, ServerError(err))
	}
	defer conn.Close()
	var absent []string
	for _, t := range tables {
		db, name, ok := cluster.SplitTableName(t)
		if !ok {
			continue
		}
		r, err := conn.Execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND TABLE_TYPE = 'BASE TABLE'", db, name)
		if err != nil {
			return nil, fmt.Errorf("look %s up on %s: %w", t, src.Addr, err)
		}
		if r.RowNumber() == 0 {
			absent = append(absent, t)
		}
	}
	return absent, nil
}
