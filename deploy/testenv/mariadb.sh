#!/usr/bin/env bash
# mariadb.sh up|down|status
# A private MariaDB for the integration tests on 127.0.0.1:3307, writing a ROW binlog with
# full row images and full row metadata (what the binlog readers under test need). It never
# touches the system instance: --no-defaults, its own datadir, socket and pid file under
# $TESTENV_DIR/mariadb/. root has no password and may connect over TCP. The server offers
# TLS (not required) with a certificate of its own test CA, made once in
# $TESTENV_DIR/mariadb/tls/ (services.sh env names the CA: BINLAKE_TEST_MYSQL_TLS_CA).
source "$(dirname "$0")/lib.sh"

NAME=mariadb
PORT=${BINLAKE_TEST_MYSQL_PORT:-3307}
SVC_DIR=$TESTENV_DIR/mariadb
DATA=$SVC_DIR/data
LOGDIR=$SVC_DIR/log
PIDFILE=$SVC_DIR/pid
# A Unix socket path must fit in sun_path (108 bytes); fall back to /tmp for deep checkouts.
SOCK=$SVC_DIR/mariadbd.sock
if (( ${#SOCK} > 100 )); then SOCK=/tmp/binlake-testenv-mariadb-$(id -u)-$PORT.sock; fi

TLSD=$SVC_DIR/tls

# tls_files: the test CA and the server's certificate (127.0.0.1 and localhost).
tls_files() {
  make_server_cert "binlake testenv MariaDB CA"
  chmod 600 ./*.key
}

# make_tls: tls_files in $TLSD, once.
make_tls() { make_once "$TLSD" "$LOGDIR/tls.log" "$NAME's test CA and server certificate" tls_files; }

# client ARGS...: the mariadb client against our instance over TCP, ignoring ~/.my.cnf.
client() { mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$PORT" -uroot "$@"; }

# ready: root without a password can run a query over TCP (ping alone answers even when
# access is denied, so it would not prove that the tests can log in).
ready() { client -N -e 'SELECT 1' >/dev/null 2>&1; }

# offers_tls: the running server has TLS on (a server started before the scripts enabled
# it is restarted by up).
offers_tls() { [[ $(client -N -e 'SELECT @@have_ssl' 2>/dev/null) == YES ]]; }

# SERVER_USER: mariadbd refuses to run as root unless told so explicitly.
SERVER_USER=()
if (( $(id -u) == 0 )); then SERVER_USER=(--user=root); fi

init_datadir() {
  log "$NAME: initialising datadir $DATA"
  mkdir -p "$DATA" "$LOGDIR"
  # --auth-root-authentication-method=normal gives root a (empty) password login instead of
  # unix_socket auth, so TCP logins work without credentials.
  if ! mariadb-install-db --no-defaults --datadir="$DATA" "${SERVER_USER[@]}" \
      --auth-root-authentication-method=normal --skip-test-db \
      >"$LOGDIR/install-db.log" 2>&1; then
    tail -n 30 "$LOGDIR/install-db.log" >&2
    rm -rf "$DATA"
    die "$NAME: mariadb-install-db failed (log: $LOGDIR/install-db.log)"
  fi
  touch "$DATA/.binlake-initialised"
}

up() {
  if pid_alive "$PIDFILE" && ready; then
    if offers_tls; then
      echo "$NAME: already running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
      return 0
    fi
    log "$NAME: the running server does not offer TLS (started by an older script); restarting it"
    stop_pid "$NAME" "$PIDFILE"
  fi
  if pid_alive "$PIDFILE"; then
    # Started by an earlier `up` that has not finished starting (or hung): wait for it.
    local t0; t0=$(now_ms)
    wait_until "$NAME" 60 "$LOGDIR/error.log" ready || die "$NAME: pid $(cat "$PIDFILE") is running but not answering on 127.0.0.1:$PORT"
    echo "$NAME: already running on 127.0.0.1:$PORT (became ready after $(elapsed "$t0") s)"
    return 0
  fi
  rm -f "$PIDFILE"
  port_open "$PORT" && die "$NAME: 127.0.0.1:$PORT is taken by a process we did not start; stop it or set BINLAKE_TEST_MYSQL_PORT"

  need_apt mariadb-server mariadb-client
  make_tls
  local t0; t0=$(now_ms)
  local first=""
  if [[ ! -f $DATA/.binlake-initialised ]]; then
    rm -rf "$DATA"
    init_datadir
    first=", datadir initialised"
  fi
  mkdir -p "$LOGDIR"

  # Settings: the binlog options are what the product reads (docs/design.md, "Test services");
  # max_allowed_packet and max_connections leave room for bulk loads and many test clients;
  # relaxed flushing keeps the shared 2-core machine responsive (durability is not under test);
  # binlogs expire after two hours, checked at each rotation every 256 MB: this server outlives
  # test runs, and without an expiry every `bench wave` (300 MB of binlog for a million rows)
  # stayed on disk until it was full (71 GB of binlogs, and Kafka and ZooKeeper died of it).
  start_bg "$PIDFILE" "$LOGDIR/stdout.log" mariadbd --no-defaults "${SERVER_USER[@]}" \
    --datadir="$DATA" --socket="$SOCK" --pid-file="$SVC_DIR/mariadbd.pid" \
    --port="$PORT" --bind-address=127.0.0.1 \
    --log-error="$LOGDIR/error.log" \
    --log-bin="$DATA/binlog" --server-id=1 \
    --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL \
    --binlog-expire-logs-seconds=7200 --max-binlog-size=256M \
    --max-allowed-packet=64M --max-connections=500 \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 --sync-binlog=0 \
    --skip-name-resolve \
    --ssl-ca="$TLSD/ca.pem" --ssl-cert="$TLSD/server.pem" --ssl-key="$TLSD/server.key"

  if ! wait_until "$NAME" 60 "$LOGDIR/error.log" ready; then
    stop_pid "$NAME" "$PIDFILE"
    die "$NAME: did not become ready on 127.0.0.1:$PORT (log: $LOGDIR/error.log)"
  fi
  offers_tls || die "$NAME: started without TLS (log: $LOGDIR/error.log)"
  echo "$NAME: ready on 127.0.0.1:$PORT in $(elapsed "$t0") s (cold start$first)"
}

down() { stop_pid "$NAME" "$PIDFILE"; }

status() {
  if pid_alive "$PIDFILE"; then
    if ready; then
      echo "$NAME: running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE")), gtid_binlog_pos='$(client -N -e 'SELECT @@gtid_binlog_pos' 2>/dev/null || echo '?')'"
    else
      echo "$NAME: pid $(cat "$PIDFILE") alive but not answering on 127.0.0.1:$PORT"
    fi
  else
    echo "$NAME: stopped"
  fi
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
