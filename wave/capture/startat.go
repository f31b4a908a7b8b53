package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/cluster"
)

// The start of an instance added without a start whose source could not be read when it
// was added (the password only on the waves' hosts, a wrong one, the source down): it
// begins where the binlog the source was writing at that time begins, so that the rows
// written between the add and the first connection are captured, not skipped.

// StartSkew is how far the clock of the host that added an instance may be ahead of the
// source's: the binlog file chosen was opened at least this long before the add.
const StartSkew = time.Minute

// probeTimeout bounds the reading of one binlog file's first events.
const probeTimeout = 10 * time.Second

// PositionAt returns the start of the binlog file the source was writing at t: the newest
// file it opened at least StartSkew before t (the time of the file's format description
// event, its first). Everything the source committed after t is at or after it; what it
// committed in that file before t comes too (at least once). When every file the source
// still has was opened after t, the binlog of that time is purged: a fatal
// ErrBinlogPurged, rather than a start that skips what it held.
func PositionAt(ctx context.Context, src cluster.Source, password string, t time.Time, log *slog.Logger) (cluster.Position, error) {
	ep, err := EndpointOf(src, password)
	if err != nil {
		return cluster.Position{}, err
	}
	conn, err := ep.connect(ctx, 10*time.Second)
	if err != nil {
		return cluster.Position{}, fmt.Errorf("connect to %s: %w", ep, ServerError(err))
	}
	files, err := binlogFiles(conn)
	conn.Close()
	if err != nil {
		return cluster.Position{}, err
	}
	before := t.Add(-StartSkew)
	var oldest time.Time
	for i := len(files) - 1; i >= 0; i-- {
		opened, err := fileOpened(ctx, src, password, files[i], log)
		if err != nil {
			return cluster.Position{}, err
		}
		if !opened.After(before) {
			return cluster.Position{File: files[i], Pos: 4}, nil
		}
		oldest = opened
	}
	if !oldest.After(t) {
		// Opened within the skew before t: it holds everything since.
		return cluster.Position{File: files[0], Pos: 4}, nil
	}
	return cluster.Position{}, Fatal(fmt.Errorf("%w: the instance was added at %s, and the oldest binlog file the source has, %s, was opened at %s: "+
		"what the source wrote in between is gone", ErrBinlogPurged, t.UTC().Format(time.RFC3339), files[0], oldest.UTC().Format(time.RFC3339)))
}

// binlogFiles lists the source's binlog files, oldest first.
func binlogFiles(conn *client.Conn) ([]string, error) {
	r, err := conn.Execute("SHOW BINARY LOGS")
	if err != nil {
		var me *mysql.MyError
		if errors.As(err, &me) && me.Code == mysql.ER_NO_BINARY_LOGGING {
			return nil, ErrBinlogOff
		}
		return nil, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	files := make([]string, 0, r.RowNumber())
	for i := range r.RowNumber() {
		name, _ := r.GetString(i, 0)
		files = append(files, name)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w (SHOW BINARY LOGS returned nothing)", ErrBinlogOff)
	}
	return files, nil
}

// fileOpened reads when the source opened binlog file: the timestamp of its format
// description event, read over a binlog connection as the instance's replica (its own
// server id: the instance is not connected yet).
func fileOpened(ctx context.Context, src cluster.Source, password, file string, log *slog.Logger) (time.Time, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ep, err := EndpointOf(src, password)
	if err != nil {
		return time.Time{}, err
	}
	host, portStr, _ := net.SplitHostPort(src.Addr)
	port, _ := strconv.ParseUint(portStr, 10, 16)
	dial := &singleDial{}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: src.ServerID, Flavor: src.Flavor, Host: host, Port: uint16(port), User: src.User, Password: password,
		TLSConfig: ep.TLS, Charset: "utf8mb4", DisableRetrySync: true, Dialer: dial.dial, Logger: goMySQLLogger(log, password),
		RawModeEnabled: true, // the headers are all it needs
	})
	defer syncer.Close()
	streamer, err := syncer.StartSync(mysql.Position{Name: file, Pos: 4})
	if err != nil {
		return time.Time{}, fmt.Errorf("read binlog file %s: %w", file, classify(err))
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	for {
		ev, err := streamer.GetEvent(pctx)
		if err != nil {
			return time.Time{}, fmt.Errorf("read binlog file %s: %w", file, classify(err))
		}
		if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT && ev.Header.Timestamp > 0 {
			return time.Unix(int64(ev.Header.Timestamp), 0), nil
		}
	}
}
