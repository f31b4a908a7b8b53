package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlake/binlake/wave/cluster"
)

// A source can let a replica connect and still be one the capture cannot read: it writes
// no binlog, logs data changes as statements (binlog_format) or rows without every column
// (binlog_row_image), or another replica reads it under the instance's server_id. The
// instance then stops, or flaps, at the first such event, maybe hours after it was added.
// SourceSettings reads those settings so that instance add (and a capture's first
// connection, in its log) says so up front.

// SourceSettings are the source's settings a capture depends on.
type SourceSettings struct {
	LogBin   string // log_bin: ON or OFF
	Format   string // binlog_format: ROW, MIXED or STATEMENT
	RowImage string // binlog_row_image: FULL, NOBLOB or MINIMAL ("" before MySQL 5.6)
	ServerID uint64 // the source's own server_id
	Version  string // the server's version, as its handshake says ("10.11.6-MariaDB-…")
	// Replicas are the replicas registered with the source (SHOW SLAVE HOSTS); ReplicasErr
	// says why they could not be listed (a privilege the wave does not otherwise need).
	Replicas    []RegisteredReplica
	ReplicasErr error
	// Access says what the instance's user was refused (CheckSource).
	Access []string
}

// RegisteredReplica is one row of the source's SHOW SLAVE HOSTS.
type RegisteredReplica struct {
	ServerID uint64
	Host     string
	Port     uint64
}

// ReadSourceSettings reads conn's server's binlog settings and server_id (not its
// replicas). A variable the server does not have stays empty; only a failed query is an
// error.
func ReadSourceSettings(conn *client.Conn) (SourceSettings, error) {
	var s SourceSettings
	r, err := conn.Execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', 'binlog_row_image', 'server_id')")
	if err != nil {
		return s, fmt.Errorf("read the source's binlog settings: %w", err)
	}
	for i := range r.RowNumber() {
		name, _ := r.GetString(i, 0)
		value, _ := r.GetString(i, 1)
		switch strings.ToLower(name) {
		case "log_bin":
			s.LogBin = strings.ToUpper(value)
		case "binlog_format":
			s.Format = strings.ToUpper(value)
		case "binlog_row_image":
			s.RowImage = strings.ToUpper(value)
		case "server_id":
			fmt.Sscan(value, &s.ServerID)
		}
	}
	return s, nil
}

// registeredReplicas lists the source's replicas: SHOW SLAVE HOSTS, or SHOW REPLICAS where
// the first is gone (MySQL 8.4).
func registeredReplicas(conn *client.Conn) ([]RegisteredReplica, error) {
	r, err := conn.Execute("SHOW SLAVE HOSTS")
	if err != nil {
		var err2 error
		if r, err2 = conn.Execute("SHOW REPLICAS"); err2 != nil {
			return nil, err
		}
	}
	var out []RegisteredReplica
	for i := range r.RowNumber() {
		var rr RegisteredReplica
		rr.ServerID, _ = r.GetUint(i, 0) // Server_id leads in every version
		rr.Host, _ = r.GetStringByName(i, "Host")
		rr.Port, _ = r.GetUintByName(i, "Port")
		out = append(out, rr)
	}
	return out, nil
}

// BinlogProblems says, one sentence each, what in s's binlog settings stops an instance
// at the first event it touches.
func (s SourceSettings) BinlogProblems() []string {
	var out []string
	if s.LogBin == "OFF" {
		// The format and row image matter once there is a binlog: said then.
		return []string{"log_bin is OFF: the source writes no binlog, so the instance has nothing to read until log_bin is turned on (a restart of the source)"}
	}
	if s.Format != "" && s.Format != "ROW" {
		out = append(out, fmt.Sprintf("binlog_format is %s: a data change the source logs as a statement stops the instance (reason %s; "+
			"on_unreadable: skip drops it instead); set binlog_format=ROW (SET GLOBAL and the server's config; open sessions keep theirs)",
			s.Format, "statement_dml"))
	}
	if s.RowImage != "" && s.RowImage != "FULL" {
		out = append(out, fmt.Sprintf("binlog_row_image is %s: rows logged without every column stop the instance (reason %s; "+
			"on_unreadable: skip drops them instead); set binlog_row_image=FULL (SET GLOBAL and the server's config; open sessions keep theirs)",
			s.RowImage, "row_image_partial"))
	}
	return out
}

// ServerIDProblems says whether serverID is the source's own or a registered replica's:
// an instance reading under it would never hold its binlog connection.
func (s SourceSettings) ServerIDProblems(serverID uint32) []string {
	var out []string
	if uint64(serverID) == s.ServerID {
		out = append(out, fmt.Sprintf("server_id %d is the source's own: give the instance one that no server of the topology has", serverID))
	}
	for _, r := range s.Replicas {
		if r.ServerID == uint64(serverID) {
			at := r.Host
			if at == "" {
				at = "a replica that gave no host"
			} else if r.Port != 0 {
				at = fmt.Sprintf("%s:%d", r.Host, r.Port)
			}
			out = append(out, fmt.Sprintf("server_id %d is already used by a replica of the source (%s): the two would end each other's "+
				"binlog connection (reason server_id_clash); give the instance a server_id of its own", serverID, at))
		}
	}
	return out
}

// CheckSource connects to a source as an instance would and reads its settings and
// registered replicas (ReplicasErr says why those could not be listed). It also tries
// what the instance's user must be allowed, and says what was refused in Access: reading
// the binlog's end (REPLICATION CLIENT, MariaDB's BINLOG MONITOR) and, when the replicas
// were listed and serverID is none of theirs, a binlog dump under serverID (REPLICATION
// SLAVE), ended at its first event; serverID 0 tries no dump. src's flavor is the one
// the source is read as.
func CheckSource(ctx context.Context, src cluster.Source, password string, serverID uint32) (SourceSettings, error) {
	ep, err := EndpointOf(src, password)
	if err != nil {
		return SourceSettings{}, err
	}
	flavor, user := src.Flavor, src.User
	conn, err := ep.connect(ctx, 10*time.Second)
	if err != nil {
		return SourceSettings{}, fmt.Errorf("connect to %s: %w", ep, ServerError(err))
	}
	defer conn.Close()
	s, err := ReadSourceSettings(conn)
	if err != nil {
		return s, err
	}
	s.Version = conn.GetServerVersion()
	s.Replicas, s.ReplicasErr = registeredReplicas(conn)
	if ok, err := canSelect(conn); err == nil && !ok {
		s.Access = append(s.Access, fmt.Sprintf("user %s may not SELECT: the wave reads the captured tables' columns from information_schema, "+
			"which shows a user only the tables it has a privilege on (without it MariaDB's JSON columns go out as text, UUID, INET4 and INET6 columns as base64 of their bytes): grant it SELECT on the captured tables", user))
	}
	if s.LogBin == "OFF" {
		return s, nil
	}
	end, err := positionNow(conn, flavor)
	if err != nil {
		s.Access = append(s.Access, fmt.Sprintf("user %s may not read where the binlog ends (%v): grant it REPLICATION CLIENT (MariaDB 10.5+: BINLOG MONITOR)", user, err))
		return s, nil
	}
	if serverID == 0 || s.ReplicasErr != nil || len(s.ServerIDProblems(serverID)) > 0 {
		// A dump under serverID could end another replica's connection: the user's own
		// grants are read instead. A user with the README's grants cannot list the
		// replicas, and its check said "valid" without a word of REPLICATION SLAVE,
		// which the waves then looped on (an outside trial).
		if ok, err := canReplicate(conn); err == nil && !ok {
			s.Access = append(s.Access, fmt.Sprintf("user %s has no REPLICATION SLAVE among its own grants (a role's are not seen here; "+
				"no binlog dump was tried, as one could end another replica's connection): without it the waves cannot read the binlog; grant it REPLICATION SLAVE", user))
		}
		return s, nil
	}
	if err := tryDump(ctx, ep, flavor, serverID, end); err != nil {
		err = ServerError(err)
		s.Access = append(s.Access, fmt.Sprintf("user %s may not read the binlog (%v): grant it REPLICATION SLAVE", user, err))
	}
	return s, nil
}

// canSelect reports whether the connection's user holds SELECT anywhere: globally, on a
// database or on a table (a role's grants are not seen, so a false answer may be wrong
// for a user that has them only through one).
func canSelect(conn *client.Conn) (bool, error) {
	r, err := conn.Execute(`SELECT COUNT(*) FROM (
		SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES
		UNION ALL SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES
		UNION ALL SELECT PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES) p WHERE PRIVILEGE_TYPE = 'SELECT'`)
	if err != nil {
		return false, err
	}
	defer r.Close()
	n, err := r.GetInt(0, 0)
	return n > 0, err
}

// canReplicate reports whether the connection's user holds REPLICATION SLAVE itself (a
// role's grants are not seen). Its own rows only: a user with a global SELECT sees every
// user's privileges there.
func canReplicate(conn *client.Conn) (bool, error) {
	r, err := conn.Execute(`SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES
		WHERE PRIVILEGE_TYPE = 'REPLICATION SLAVE' AND GRANTEE = CONCAT("'", SUBSTRING_INDEX(CURRENT_USER(), '@', 1), "'@'", SUBSTRING_INDEX(CURRENT_USER(), '@', -1), "'")`)
	if err != nil {
		return false, err
	}
	defer r.Close()
	n, err := r.GetInt(0, 0)
	return n > 0, err
}

// tryDump opens a binlog dump under serverID at the binlog's end and ends it at its
// first event (the rotate event a source sends first): a user without REPLICATION SLAVE
// is refused there.
func tryDump(ctx context.Context, ep Endpoint, flavor string, serverID uint32, at cluster.Position) error {
	host, portStr, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return err
	}
	port, _ := strconv.ParseUint(portStr, 10, 16)
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: serverID, Flavor: flavor, Host: host, Port: uint16(port), User: ep.User, Password: ep.Password,
		TLSConfig: ep.TLS, DisableRetrySync: true, Logger: goMySQLLogger(slog.New(slog.DiscardHandler), ep.Password),
	})
	defer syncer.Close()
	st, err := syncer.StartSync(mysql.Position{Name: at.File, Pos: at.Pos})
	if err != nil {
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = st.GetEvent(gctx)
	return err
}

// FlavorOf says the flavor of a server by its version: mariadb when it says MariaDB.
func FlavorOf(version string) string {
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return cluster.FlavorMariaDB
	}
	return cluster.FlavorMySQL
}

// ServerError is the server's own error inside err when it has one ("ERROR 1045 (28000):
// Access denied …"), without the driver's function names in front of it
// ("handleAuthResult: readAuthResult: …"); err otherwise.
func ServerError(err error) error {
	var h *hintError
	if errors.As(err, &h) {
		return h
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me
	}
	return err
}
