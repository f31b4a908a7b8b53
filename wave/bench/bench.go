// Package bench is `binlake bench wave`: it loads rows into a MariaDB/MySQL test server,
// captures them to Kafka with a wave pipeline (the real one: binlog reader, decoder,
// encoder, batching publisher with acks from all in-sync replicas, offset commits), and
// times `mariadb-binlog --read-from-remote-server --base64-output=decode-rows -v`
// decoding the same binlog range as a reference.
package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlake/binlake/internal/benchkit"
	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/internal/coord/single"
	"github.com/binlake/binlake/wave"
	"github.com/binlake/binlake/wave/cluster"
	"github.com/binlake/binlake/wave/rowenc"
)

// Options configures a run. Zero fields take the defaults named.
type Options struct {
	// Rows to load and capture. 1,000,000.
	Rows int
	// Prefix begins the names of the run's database (prefix_<tag>) and topic
	// (prefix.<tag>), and a run drops only the databases of its prefix left by a killed
	// run: on a shared server, a name of one's own. DefaultPrefix when empty.
	Prefix string
	// RowsPerTxn is the rows of one INSERT transaction. 100.
	RowsPerTxn int
	// Addr, User and Password reach the source (it needs log_bin and binlog_format=ROW).
	// 127.0.0.1:3307, root.
	Addr, User string
	Password   config.Secret
	// Brokers are the Kafka bootstrap brokers. 127.0.0.1:9092.
	Brokers []string
	// Partitions of the benchmark topic. 3.
	Partitions int
	// KafkaBatchSize is the producer's messages per partition per request, as
	// sink.kafka.batch_size. 1000.
	KafkaBatchSize int
	// BatchRows is pipeline.batch_rows. 5000.
	BatchRows int
	// InFlight is pipeline.publish_in_flight. wave.DefaultPublishInFlight.
	InFlight int
	// Linger is sink.kafka.linger. 1 ms.
	Linger time.Duration
	// Compression is sink.kafka.compression: none, gzip, snappy, lz4 or zstd. lz4.
	Compression string
	// Profile, when set, is started as the capture starts and stopped as it ends: the
	// wave runs in this process, so a CPU profile then is the wave's (plus the bench's
	// little polling).
	Profile func() (stop func(), err error)
	// MariadbBinlog is the reference decoder; "mariadb-binlog" (then "mysqlbinlog") from
	// PATH when empty. "-" skips the reference.
	MariadbBinlog string
	// Snapshot times a snapshot of the loaded rows (an instance started after the load
	// with snapshot.initial) instead of their capture from the binlog; no reference.
	Snapshot bool
	// ChunkRows is snapshot.chunk_rows. wave.DefaultSnapshotChunkRows.
	ChunkRows int
	// Format is the subscription's message format (rowenc.FormatNames). json.
	Format string
	// Keep leaves the database and the topic in place.
	Keep bool
	// Out receives progress lines and the report.
	Out io.Writer
	// Logger receives the pipeline's logs (warnings and errors are worth seeing).
	Logger *slog.Logger
}

// stallLimit is how long a capture may publish nothing before the run gives up.
const stallLimit = 60 * time.Second

// DefaultPrefix begins the run's database and topic names unless Options.Prefix is given.
const DefaultPrefix = "binlake_bench"

// validPrefix is what both a database's and a topic's name may hold.
var validPrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,40}$`)

func (o *Options) setDefaults() error {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !validPrefix.MatchString(o.Prefix) {
		return fmt.Errorf("bench: -prefix %q: want a letter, then up to 40 letters, digits or _ (it begins a database's and a topic's name)", o.Prefix)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Rows, 1_000_000)
	def(&o.RowsPerTxn, 100)
	def(&o.Partitions, 3)
	def(&o.KafkaBatchSize, 1000)
	def(&o.BatchRows, 5000)
	def(&o.InFlight, wave.DefaultPublishInFlight)
	def(&o.ChunkRows, cluster.DefaultSnapshotChunkRows)
	if o.Linger == 0 {
		o.Linger = time.Millisecond
	}
	if o.Linger < 0 {
		return fmt.Errorf("bench: linger %s is negative", o.Linger)
	}
	if o.Compression == "" {
		o.Compression = "lz4"
	}
	for name, v := range map[string]int{"rows": o.Rows, "rows per transaction": o.RowsPerTxn, "partitions": o.Partitions,
		"kafka batch size": o.KafkaBatchSize, "batch rows": o.BatchRows, "in flight": o.InFlight, "chunk rows": o.ChunkRows} {
		if v < 1 {
			return fmt.Errorf("bench: %s %d: must be at least 1", name, v)
		}
	}
	if _, err := rowenc.NewFormat(o.Format, nil); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	// Checked before the rows are loaded: a bad codec or reference decoder failed the run
	// after its capture, and threw the capture's figure away (an outside trial).
	switch o.Compression {
	case "none", "gzip", "snappy", "lz4", "zstd":
	default:
		return fmt.Errorf("bench: compression %q: want none, gzip, snappy, lz4 or zstd", o.Compression)
	}
	if o.MariadbBinlog != "-" {
		bin, err := referenceBinary(o.MariadbBinlog)
		if err != nil {
			return err
		}
		o.MariadbBinlog = bin
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:3307"
	}
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return fmt.Errorf("bench: source address %q: want host:port", config.Redact(o.Addr))
	}
	if o.User == "" {
		o.User = "root"
	}
	if len(o.Brokers) == 0 {
		o.Brokers = []string{"127.0.0.1:9092"}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return nil
}

// Result holds the figures of a run.
type Result struct {
	Rows int
	Load time.Duration
	// Capture is from the instance's start (its capture starting, after the wave took
	// the leadership, created the topic and wrote the starting offset: Startup) to the
	// broker acknowledging the last row. Committed is from the wave's start to the
	// committed offset covering every row, which the wave writes every 100 ms here.
	Capture   time.Duration
	Startup   time.Duration
	Committed time.Duration
	Published int64         // rows acknowledged, as the wave counted them (its committed offset)
	Messages  int64         // messages acknowledged, as the wave counted them: fewer than the rows for a grouping format (canal-protobuf)
	Bytes     int64         // key + value bytes acknowledged
	OnBroker  int64         // messages on the topic per the broker's high watermarks
	Reference time.Duration // mariadb-binlog over the same range; 0 when skipped
	RefBytes  int64         // its output
	RefCmd    string
	Binlog    int64 // bytes of binlog in the range
	// CPU is what each process spent during the capture: the wave (this process),
	// the Kafka broker and the source server; -1 where it could not be read.
	CPU CaptureCPU
}

// CaptureRowsPerS is the wave's capture rate.
func (r *Result) CaptureRowsPerS() float64 { return float64(r.Rows) / r.Capture.Seconds() }

// ReferenceRowsPerS is mariadb-binlog's decoding rate over the same rows.
func (r *Result) ReferenceRowsPerS() float64 { return float64(r.Rows) / r.Reference.Seconds() }

// Run loads, captures, times the reference and prints the report.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	out := opts.Out
	res := &Result{Rows: opts.Rows}
	tag := fmt.Sprintf("%d", time.Now().UnixNano()%1e10)
	db := opts.Prefix + "_" + tag
	topic := opts.Prefix + "." + tag

	conn, err := client.ConnectWithContext(ctx, opts.Addr, opts.User, opts.Password.Reveal(), "", 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("bench: connect to %s as %s: %w", opts.Addr, opts.User, err)
	}
	defer conn.Close()
	if err := dropStale(conn, opts.Prefix+"_", staleAfter, out); err != nil {
		fmt.Fprintf(out, "could not look for bench databases left by killed runs: %v\n", err)
	}
	if _, err := conn.Execute("CREATE DATABASE " + db); err != nil {
		return nil, fmt.Errorf("bench: create database: %w", err)
	}
	if !opts.Keep {
		defer func() {
			if c, err := client.ConnectWithContext(context.Background(), opts.Addr, opts.User, opts.Password.Reveal(), "", 10*time.Second); err == nil {
				c.Execute("DROP DATABASE IF EXISTS " + db)
				c.Close()
			}
		}()
	}
	if _, err := conn.Execute(`CREATE TABLE ` + db + `.bench (
		id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
		amount DECIMAL(20,4) NOT NULL,
		name VARCHAR(64) CHARACTER SET utf8mb4 NOT NULL,
		created DATETIME(6) NOT NULL,
		flags INT UNSIGNED NOT NULL,
		meta JSON NULL,
		note VARCHAR(255) NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`); err != nil {
		return nil, fmt.Errorf("bench: create table: %w", err)
	}
	// The range starts a binlog file of its own: the server finds a starting GTID (or
	// the GTID at a file/pos, BINLOG_GTID_POS) by reading its file from the top, which
	// after earlier runs in the same file took the wave 100 ms before its first row.
	if _, err := conn.Execute("FLUSH BINARY LOGS"); err != nil {
		fmt.Fprintf(out, "could not start a new binlog file (%v): the wave's start-up includes the server reading the current one up to the start\n", err)
	}
	start, err := masterStatus(conn)
	if err != nil {
		return nil, err
	}

	fmt.Fprintf(out, "loading %d rows into %s.bench on %s, %d rows per transaction\n", opts.Rows, db, opts.Addr, opts.RowsPerTxn)
	t0 := time.Now()
	if err := load(ctx, conn, db, opts.Rows, opts.RowsPerTxn, out); err != nil {
		return nil, err
	}
	res.Load = time.Since(t0)
	end, err := masterStatus(conn)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "loaded %d rows in %s (%.0f rows/s); binlog %s:%d → %s:%d\n", opts.Rows, res.Load.Round(time.Millisecond),
		float64(opts.Rows)/res.Load.Seconds(), start.File, start.Pos, end.File, end.Pos)
	files, sizes, err := binlogRange(conn, start, end)
	if err != nil {
		return nil, err
	}
	res.Binlog = sizes

	if opts.Snapshot {
		// The instance starts where the load ended: every row comes from the snapshot.
		start, res.Binlog = end, 0
		opts.MariadbBinlog = "-"
	}
	settle(ctx, opts, "capture")
	if !opts.Keep {
		defer deleteTopic(opts.Brokers, topic) // also when the capture fails half-way
	}
	if err := capture(ctx, opts, db, topic, start, res); err != nil {
		return nil, err
	}

	if opts.MariadbBinlog != "-" {
		settle(ctx, opts, "reference")
		if err := reference(ctx, opts, files, start, end, res); err != nil {
			return nil, err
		}
	}
	report(out, opts, res)
	return res, nil
}

// staleAfter is how old a bench database must be for a later run to drop it: a run
// takes minutes, so one older than this was left by a run killed before its cleanup.
const staleAfter = 6 * time.Hour

// dropStale drops the databases named prefix… whose tables were all created more than
// age ago, saying which: a bench run killed (kill -9, a lost VM) before its cleanup
// leaves its million rows behind, and their binlog with them until it expires.
func dropStale(conn *client.Conn, prefix string, age time.Duration, out io.Writer) error {
	like := strings.ReplaceAll(prefix, "_", `\_`) + "%"
	r, err := conn.Execute(`SELECT TABLE_SCHEMA, MAX(CREATE_TIME) FROM information_schema.TABLES
		WHERE TABLE_SCHEMA LIKE ? GROUP BY TABLE_SCHEMA
		HAVING MAX(CREATE_TIME) < NOW() - INTERVAL ? SECOND`, like, int64(age.Seconds()))
	if err != nil {
		return err
	}
	for i := range r.RowNumber() {
		name, _ := r.GetString(i, 0)
		created, _ := r.GetString(i, 1)
		fmt.Fprintf(out, "dropping %s, created %s: a bench run's data left by a run killed before its cleanup\n", name, created)
		if _, err := conn.Execute("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
	}
	return nil
}

// load inserts rows in transactions of per rows, as literal SQL (no prepared statement
// round trips), printing progress every two seconds.
func load(ctx context.Context, conn *client.Conn, db string, rows, per int, out io.Writer) error {
	var sb strings.Builder
	last := time.Now()
	t0 := last
	for id := 1; id <= rows; {
		if err := ctx.Err(); err != nil {
			return err
		}
		sb.Reset()
		sb.WriteString("INSERT INTO " + db + ".bench (id,amount,name,created,flags,meta,note) VALUES ")
		n := min(per, rows-id+1)
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			k := id + i
			fmt.Fprintf(&sb, `(%d,'%d.%04d','name-%d ü','2026-%02d-%02d %02d:%02d:%02d.%06d',%d,'{"k":%d,"tags":["a","b"],"ok":true}',`,
				k, k%1000003, k%10000, k, 1+k%12, 1+k%28, k%24, k%60, (k/60)%60, k%1000000, uint32(k)*2654435761, k)
			if k%5 == 0 {
				sb.WriteString("NULL)")
			} else {
				fmt.Fprintf(&sb, "'note %d: the quick brown fox jumps over the lazy dog')", k)
			}
		}
		if _, err := conn.Execute(sb.String()); err != nil {
			return fmt.Errorf("bench: insert rows %d-%d: %w", id, id+n-1, err)
		}
		id += n
		if time.Since(last) >= 2*time.Second {
			last = time.Now()
			fmt.Fprintf(out, "  loaded %d/%d rows (%.0f rows/s)\n", id-1, rows, float64(id-1)/time.Since(t0).Seconds())
		}
	}
	return nil
}

func masterStatus(conn *client.Conn) (cluster.Position, error) {
	var p cluster.Position
	r, err := conn.Execute("SHOW MASTER STATUS")
	if err != nil {
		return p, fmt.Errorf("bench: SHOW MASTER STATUS: %w", err)
	}
	if r.RowNumber() == 0 {
		return p, errors.New("bench: SHOW MASTER STATUS returned nothing: is log_bin on?")
	}
	p.File, _ = r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	p.Pos = uint32(pos)
	if g, err := conn.Execute("SELECT @@GLOBAL.gtid_binlog_pos"); err == nil {
		p.GTIDSet, _ = g.GetString(0, 0)
	}
	return p, nil
}

// binlogRange lists the binlog files from start's to end's and the bytes between them.
func binlogRange(conn *client.Conn, start, end cluster.Position) ([]string, int64, error) {
	r, err := conn.Execute("SHOW BINARY LOGS")
	if err != nil {
		return nil, 0, fmt.Errorf("bench: SHOW BINARY LOGS: %w", err)
	}
	var files []string
	var bytes int64
	in := false
	for i := range r.RowNumber() {
		name, _ := r.GetString(i, 0)
		size, _ := r.GetInt(i, 1)
		if name == start.File {
			in = true
		}
		if !in {
			continue
		}
		files = append(files, name)
		from, to := int64(0), size
		if name == start.File {
			from = int64(start.Pos)
		}
		if name == end.File {
			to = int64(end.Pos)
		}
		bytes += to - from
		if name == end.File {
			break
		}
	}
	if len(files) == 0 || files[len(files)-1] != end.File {
		return nil, 0, fmt.Errorf("bench: binlog files %s..%s not both listed by SHOW BINARY LOGS", start.File, end.File)
	}
	return files, bytes, nil
}

// capture runs a wave pipeline from start and waits until its committed offset counts
// every row: the rows are then acknowledged by Kafka.
func capture(ctx context.Context, opts Options, db, topic string, start cluster.Position, res *Result) error {
	out := opts.Out
	dir, err := os.MkdirTemp("", "binlake-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c, err := single.New(single.Options{Path: filepath.Join(dir, "coord.json")})
	if err != nil {
		return err
	}
	defer c.Close()
	const maxMsg = 1 << 20
	b, err := kafka.New(kafka.Options{Brokers: opts.Brokers, ClientID: "binlake-bench", BatchSize: opts.KafkaBatchSize,
		BatchTimeout: opts.Linger, Compression: opts.Compression,
		BatchBytes: maxMsg, Logger: opts.Logger})
	if err != nil {
		return err
	}
	defer b.Close()
	pub, err := b.Publisher()
	if err != nil {
		return err
	}
	defer pub.Close()
	inst := &cluster.Instance{
		ID: "bench",
		Source: cluster.Source{Addr: opts.Addr, User: opts.User, Flavor: cluster.FlavorMariaDB,
			ServerID: uint32(50000 + time.Now().UnixNano()%10000)},
		Start:         &start,
		Subscriptions: []cluster.Subscription{{Name: "bench", Topic: topic, Include: []string{db + `\.bench`}, Format: opts.Format}},
	}
	if opts.Snapshot {
		inst.Snapshot = &cluster.SnapshotOptions{Initial: true, ChunkRows: opts.ChunkRows}
	}
	if _, err := cluster.AddInstance(ctx, c, inst, "bench", nil); err != nil {
		return err
	}
	w, err := wave.New(wave.Options{Node: "bench", Coord: c, Publisher: pub, Topics: b,
		TopicSpec:       bus.TopicSpec{Partitions: opts.Partitions, MaxMessageBytes: maxMsg},
		MaxMessageBytes: maxMsg - 128, PollInterval: 100 * time.Millisecond, Logger: opts.Logger,
		Password: func(cluster.Source) (config.Secret, error) { return opts.Password, nil },
		Pipeline: wave.PipelineOptions{BatchRows: opts.BatchRows, CommitInterval: 100 * time.Millisecond,
			PublishChunkMessages: opts.KafkaBatchSize, PublishChunkBytes: maxMsg, PublishInFlight: opts.InFlight,
			PublishLinger: opts.Linger}})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	what := "capturing"
	if opts.Snapshot {
		what = fmt.Sprintf("snapshotting %s.bench (chunks of %d rows)", db, opts.ChunkRows)
	}
	fmt.Fprintf(out, "%s to Kafka topic %s (%d partitions, acks=all, batch %d messages/partition, linger %s, %s compression, %d batches in flight) from %s\n",
		what, topic, opts.Partitions, opts.KafkaBatchSize, opts.Linger, opts.Compression, opts.InFlight, start.String())
	if opts.Profile != nil {
		stop, err := opts.Profile()
		if err != nil {
			return err
		}
		defer stop()
	}
	cpu := newCPUWatch(opts)
	t0 := time.Now()
	var running, acked time.Time
	go func() { errc <- w.Run(wctx) }()
	var werr error
	defer func() {
		cancel()
		if werr == nil {
			<-errc
		}
	}()
	// Polled every 5 ms from this process, so cheaply: the wave's own status and
	// counter, and the coordinator only once every row is acknowledged. A capture that
	// publishes nothing for stallLimit while it retries (Kafka unreachable, a source that
	// refuses) ends the run with its error: it retried for ever (an outside trial).
	last := time.Now()
	progressAt, progress := time.Now(), int64(-1)
	for {
		st := instanceStatus(w)
		if st.State == cluster.StateError {
			return fmt.Errorf("bench: capture stopped: %s", st.Error)
		}
		if n := w.Published("bench"); n != progress {
			progressAt, progress = time.Now(), n
		} else if time.Since(progressAt) > stallLimit {
			return fmt.Errorf("bench: nothing published for %s, the capture %s: %s", stallLimit, st.State, cmp.Or(st.Error, "no error given"))
		}
		if running.IsZero() && st.State == cluster.StateRunning {
			running = time.Now()
			cpu.start()
		}
		published := w.Published("bench")
		if !running.IsZero() && acked.IsZero() && published >= int64(opts.Rows) {
			acked = time.Now()
			res.CPU = cpu.stop()
		}
		if !acked.IsZero() {
			info, err := cluster.ShowInstance(ctx, c, "bench", 0, time.Now)
			if err != nil {
				return err
			}
			if info.Position != nil && info.Position.Rows >= int64(opts.Rows) {
				res.Committed = time.Since(t0)
				res.Startup, res.Capture = running.Sub(t0), acked.Sub(running)
				res.Published = info.Position.Rows
				break
			}
		}
		if time.Since(last) >= 2*time.Second {
			last = time.Now()
			fmt.Fprintf(out, "  captured %d/%d rows (%.0f rows/s)\n", published, opts.Rows, float64(published)/time.Since(t0).Seconds())
		}
		select {
		case werr = <-errc:
			return fmt.Errorf("bench: wave stopped: %v", werr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	res.Bytes = int64(metric(rec.Body.String(), `binlake_wave_bytes_published_total{instance="bench"}`))
	res.Messages = int64(metric(rec.Body.String(), `binlake_wave_messages_published_total{instance="bench"}`))
	if n, err := onBroker(ctx, opts.Brokers, topic); err != nil {
		return err
	} else {
		res.OnBroker = n
	}
	// Every message the wave counted as acknowledged is on the broker; a message per row,
	// or fewer when the format groups rows (then the rows the wave counted say the rest).
	if res.OnBroker < res.Messages || res.Messages <= 0 || res.Messages > res.Published {
		return fmt.Errorf("bench: the broker holds %d messages on %s, the wave published %d carrying %d rows", res.OnBroker, topic, res.Messages, res.Published)
	}
	return nil
}

// instanceStatus is the bench instance's status in the wave (empty before it has one).
func instanceStatus(w *wave.Wave) wave.InstanceStatus {
	for _, s := range w.Status() {
		if s.ID == "bench" {
			return s
		}
	}
	return wave.InstanceStatus{}
}

func metric(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// onBroker sums the topic's high watermarks: the messages the broker acknowledged.
func onBroker(ctx context.Context, brokers []string, topic string) (int64, error) {
	k := benchkit.NewKafka(brokers)
	defer k.Close()
	ends, err := k.EndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	var n int64
	for _, end := range ends {
		n += end
	}
	return n, nil
}

// deleteTopic deletes the benchmark topic, best effort: the run's figures are already out.
func deleteTopic(brokers []string, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k := benchkit.NewKafka(brokers)
	defer k.Close()
	k.DeleteTopic(ctx, topic)
}

// countWriter counts what the reference decoder prints.
type countWriter struct{ n atomic.Int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

// referenceBinary is the reference decoder to run: bin (a path or a name on PATH), or
// mariadb-binlog or mysqlbinlog from PATH when bin is empty.
func referenceBinary(bin string) (string, error) {
	if bin != "" {
		p, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("bench: -mariadb-binlog %s: %w (or pass -mariadb-binlog - to skip the reference)", bin, err)
		}
		return p, nil
	}
	for _, name := range []string{"mariadb-binlog", "mysqlbinlog"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("bench: neither mariadb-binlog nor mysqlbinlog is on PATH (install mariadb-client, or pass -mariadb-binlog -)")
}

// reference times mariadb-binlog decoding the same range from the server.
func reference(ctx context.Context, opts Options, files []string, start, end cluster.Position, res *Result) error {
	out := opts.Out
	bin, err := referenceBinary(opts.MariadbBinlog)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(opts.Addr)
	args := []string{"--read-from-remote-server", "--host=" + host, "--port=" + port, "--user=" + opts.User,
		"--base64-output=decode-rows", "-v",
		"--start-position=" + strconv.FormatUint(uint64(start.Pos), 10), "--stop-position=" + strconv.FormatUint(uint64(end.Pos), 10)}
	args = append(args, files...)
	res.RefCmd = filepath.Base(bin) + " " + strings.Join(args, " ")
	cmd := exec.CommandContext(ctx, bin, args...)
	if pw := opts.Password.Reveal(); pw != "" {
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+pw) // not on the command line, where ps shows it
	}
	cw := &countWriter{}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = cw, &stderr
	fmt.Fprintf(out, "reference: %s > /dev/null\n", res.RefCmd)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: start %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("bench: %s: %w: %s", filepath.Base(bin), err, strings.TrimSpace(stderr.String()))
			}
			res.Reference = time.Since(t0)
			res.RefBytes = cw.n.Load()
			return nil
		case <-tick.C:
			fmt.Fprintf(out, "  %s: %.0f MB of text so far\n", filepath.Base(bin), float64(cw.n.Load())/1e6)
		}
	}
}

func report(out io.Writer, opts Options, r *Result) {
	what := "wave capture"
	if opts.Snapshot {
		what = "wave snapshot"
	}
	if opts.Format != "" {
		what += " (format " + opts.Format + ")"
	}
	fmt.Fprintf(out, "\n%s to Kafka: %d rows in %s: %.0f rows/s, %.1f MB/s of messages (%d rows in %d messages, %.1f MB, acks=all; the broker holds %d)\n",
		what, r.Rows, r.Capture.Round(time.Millisecond), r.CaptureRowsPerS(), float64(r.Bytes)/1e6/r.Capture.Seconds(),
		r.Published, r.Messages, float64(r.Bytes)/1e6, r.OnBroker)
	fmt.Fprintf(out, "  (from the capture's start to the last acknowledgement; before it the wave's start-up took %s: leadership, topic, starting offset; from the wave's start to the offset committed over every row: %s, %.0f rows/s)\n",
		r.Startup.Round(time.Millisecond), r.Committed.Round(time.Millisecond), float64(r.Rows)/r.Committed.Seconds())
	if opts.Snapshot {
		fmt.Fprintf(out, "snapshot: %.0f rows/s (SELECTs in primary-key chunks of %d rows, interleaved with the binlog)\n", r.CaptureRowsPerS(), opts.ChunkRows)
	} else {
		fmt.Fprintf(out, "binlog range: %.1f MB (%.1f MB/s read by the wave)\n", float64(r.Binlog)/1e6, float64(r.Binlog)/1e6/r.Capture.Seconds())
	}
	if r.Reference > 0 {
		fmt.Fprintf(out, "mariadb-binlog decode (reference): %s: %.0f rows/s, %.1f MB/s of binlog, %.1f MB of text\n",
			r.Reference.Round(time.Millisecond), r.ReferenceRowsPerS(), float64(r.Binlog)/1e6/r.Reference.Seconds(), float64(r.RefBytes)/1e6)
		fmt.Fprintf(out, "ratio wave/mariadb-binlog: %.2f (rows/s)\n", r.CaptureRowsPerS()/r.ReferenceRowsPerS())
	}
	fmt.Fprintf(out, "CPU during the capture (%s): wave %s, Kafka broker %s, source server %s\n", r.Capture.Round(time.Millisecond),
		cores(r.CPU.Wave, r.Capture), cores(r.CPU.Broker, r.Capture), cores(r.CPU.Source, r.Capture))
}

// cores formats a CPU time as seconds and the cores it kept busy over d.
func cores(cpu, d time.Duration) string {
	if cpu < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f s (%.2f cores)", cpu.Seconds(), cpu.Seconds()/d.Seconds())
}
