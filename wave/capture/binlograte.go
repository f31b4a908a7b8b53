package capture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/wave/cluster"
)

// BinlogRate is how fast a source's binlog grew over a short window: what `binlake
// instance add` tells the judge of a new instance's work before any wave runs it (the
// bytes a wave reads; what it publishes differs by the subscriptions' filters and the
// rows' encoding, which the judge's prices of a byte absorb for the instances it sees).
type BinlogRate struct {
	BytesPerS float64
	Bytes     uint64
	Over      time.Duration
}

// MeasureBinlogRate lists src's binary logs twice, over apart, and returns how fast
// they grew: a log in both listings by the difference of its sizes, a log only in the
// second (a rotation) by its whole size; a log purged meanwhile counts nothing. SHOW
// BINARY LOGS answers on MySQL and MariaDB alike (the capture's user has its privilege:
// REPLICATION CLIENT, or BINLOG MONITOR on MariaDB) and, unlike SHOW MASTER STATUS,
// also on MySQL 8.4, and its sizes cover a rotation. A source without binary logging
// gives ErrBinlogOff.
func MeasureBinlogRate(ctx context.Context, src cluster.Source, password string, over time.Duration) (BinlogRate, error) {
	if over <= 0 {
		return BinlogRate{}, fmt.Errorf("measure the binlog of %s: a window of %s: want more than 0", src.Addr, over)
	}
	ep, err := EndpointOf(src, password)
	if err != nil {
		return BinlogRate{}, err
	}
	conn, err := ep.connect(ctx, 10*time.Second)
	if err != nil {
		return BinlogRate{}, fmt.Errorf("connect to %s: %w", ep, ServerError(err))
	}
	defer conn.Close()
	before, err := binlogSizes(conn)
	if err != nil {
		return BinlogRate{}, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return BinlogRate{}, ctx.Err()
	case <-time.After(over):
	}
	after, err := binlogSizes(conn)
	if err != nil {
		return BinlogRate{}, err
	}
	took := time.Since(start)
	var grew uint64
	for name, size := range after {
		if was, ok := before[name]; ok {
			if size > was {
				grew += size - was
			}
			continue
		}
		grew += size
	}
	return BinlogRate{BytesPerS: float64(grew) / took.Seconds(), Bytes: grew, Over: took}, nil
}

// binlogSizes is SHOW BINARY LOGS: each log's size by name.
func binlogSizes(conn *client.Conn) (map[string]uint64, error) {
	r, err := conn.Execute("SHOW BINARY LOGS")
	if err != nil {
		var me *mysql.MyError
		if errors.As(err, &me) && me.Code == mysql.ER_NO_BINARY_LOGGING {
			return nil, ErrBinlogOff
		}
		return nil, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	if r.RowNumber() == 0 {
		return nil, ErrBinlogOff
	}
	out := make(map[string]uint64, r.RowNumber())
	for i := range r.RowNumber() {
		name, err := r.GetString(i, 0)
		if err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS: log name: %w", err)
		}
		size, err := r.GetUint(i, 1)
		if err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS: size of %s: %w", name, err)
		}
		out[name] = size
	}
	return out, nil
}
