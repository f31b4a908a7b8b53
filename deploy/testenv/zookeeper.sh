#!/usr/bin/env bash
# zookeeper.sh up|down|status|leader|member-stop N|member-kill N|member-start N
# Two ZooKeepers for the integration tests, both from Debian's `zookeeper` package:
#   - standalone on 127.0.0.1:2181 (BINLAKE_TEST_ZK);
#   - a three-member ensemble on 127.0.0.1:2182,2183,2184 (BINLAKE_TEST_ZK_ENSEMBLE) for the
#     HA tests, which stop and restart members through the member-* subcommands.
# Member N (1..3) has client port 2181+N, quorum port 28880+N and election port 38880+N.
# State, logs and pids live under $TESTENV_DIR/zookeeper/{standalone,ensemble/N}/.
source "$(dirname "$0")/lib.sh"

SVC_DIR=$TESTENV_DIR/zookeeper
MEMBERS=(1 2 3)
STANDALONE_PORT=2181
ZK_CP=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar

member_port() { echo $((2181 + $1)); }
member_dir() { echo "$SVC_DIR/ensemble/$1"; }

# fourlw PORT WORD: send a four-letter word and print the answer (empty when nobody answers).
fourlw() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf %s "$2" >&3 && cat <&3' _ "$1" "$2" 2>/dev/null || true
}
imok() { [[ $(fourlw "$1" ruok) == imok ]]; }
# mode PORT: leader, follower or standalone once the server serves requests; empty otherwise.
mode() { fourlw "$1" srvr | sed -n 's/^Mode: //p'; }
serving() { [[ -n $(mode "$1") ]]; }

# write_conf DIR PORT [MYID]: the instance's zoo.cfg and log4j.properties (rewritten on every
# start so the script stays the one source of truth), and myid for ensemble members.
write_conf() {
  local dir=$1 port=$2 myid=${3:-} m
  mkdir -p "$dir/conf" "$dir/data" "$dir/log"
  # tickTime 500 lets clients ask for session timeouts from 1 s (minSessionTimeout = 2 ticks),
  # so session-expiry tests stay short; maxSessionTimeout is raised so long timeouts are
  # granted as asked instead of being capped at 20 ticks. forceSync=no: on this shared disk an
  # fsync of the write-ahead log takes 1-4 s while MariaDB, Kafka and Elasticsearch write (the
  # server log says so), long enough to stall every client past its session timeout; a killed
  # server keeps its writes in the page cache, and durability across power loss is not under test.
  cat >"$dir/conf/zoo.cfg" <<CFG
tickTime=500
forceSync=no
initLimit=20
syncLimit=10
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
CFG
  if [[ -n $myid ]]; then
    echo "$myid" >"$dir/data/myid"
    for m in "${MEMBERS[@]}"; do
      echo "server.$m=127.0.0.1:$((28880 + m)):$((38880 + m))" >>"$dir/conf/zoo.cfg"
    done
  fi
  cat >"$dir/conf/log4j.properties" <<LOG
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.RollingFileAppender
log4j.appender.FILE.File=$dir/log/zookeeper.log
log4j.appender.FILE.MaxFileSize=10MB
log4j.appender.FILE.MaxBackupIndex=2
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
LOG
}

# start_instance DIR PORT [MYID]: launch one server in the background (no waiting).
start_instance() {
  local dir=$1 port=$2 myid=${3:-}
  port_open "$port" && die "zookeeper: 127.0.0.1:$port is taken by a process we did not start"
  write_conf "$dir" "$port" "$myid"
  # Small heaps and the serial collector: four JVMs share a 2-core test machine.
  start_bg "$dir/pid" "$dir/log/stdout.log" java -Xms32m -Xmx256m -XX:+UseSerialGC \
    -Djava.net.preferIPv4Stack=true -Dlog4j.configuration="file:$dir/conf/log4j.properties" \
    -Dzookeeper.jmx.log4j.disable=true \
    -cp "$dir/conf:$ZK_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/conf/zoo.cfg"
}

check_member() { [[ ${1:-} =~ ^[1-3]$ ]] || die "zookeeper: member number must be 1, 2 or 3, got '${1:-}'"; }

members_alive() { local n=0 m; for m in "${MEMBERS[@]}"; do pid_alive "$(member_dir "$m")/pid" && n=$((n + 1)); done; echo "$n"; }

all_members_serving() { local m; for m in "${MEMBERS[@]}"; do serving "$(member_port "$m")" || return 1; done; }

leader() {
  local m
  for m in "${MEMBERS[@]}"; do
    if [[ $(mode "$(member_port "$m")") == leader ]]; then echo "$m"; return 0; fi
  done
  return 1
}

# up: launch whatever is missing (all JVMs at once, their start-up overlaps), then wait for
# the standalone server and for the ensemble. Times count from the launch.
up() {
  local sdir=$SVC_DIR/standalone m t0 s_started="" e_started=""
  t0=$(now_ms)
  if pid_alive "$sdir/pid" && serving "$STANDALONE_PORT"; then
    echo "zookeeper: already running on 127.0.0.1:$STANDALONE_PORT (pid $(cat "$sdir/pid"))"
  else
    s_started=1
    pid_alive "$sdir/pid" || { rm -f "$sdir/pid"; start_instance "$sdir" "$STANDALONE_PORT"; }
  fi
  if [[ $(members_alive) == "${#MEMBERS[@]}" ]] && all_members_serving; then
    echo "zookeeper-ensemble: already running on 127.0.0.1:2182,2183,2184 (leader is member $(leader || echo '?'))"
  else
    e_started=1
    for m in "${MEMBERS[@]}"; do
      pid_alive "$(member_dir "$m")/pid" || { rm -f "$(member_dir "$m")/pid"; start_instance "$(member_dir "$m")" "$(member_port "$m")" "$m"; }
    done
  fi
  if [[ -n $s_started ]]; then
    if ! wait_until zookeeper 60 "$sdir/log/zookeeper.log" serving "$STANDALONE_PORT"; then
      tail -n 20 "$sdir/log/stdout.log" >&2 || true
      die "zookeeper: standalone did not answer on 127.0.0.1:$STANDALONE_PORT"
    fi
    echo "zookeeper: ready on 127.0.0.1:$STANDALONE_PORT in $(elapsed "$t0") s (cold start)"
  fi
  if [[ -n $e_started ]]; then
    if ! wait_until zookeeper-ensemble 90 "$(member_dir 1)/log/zookeeper.log" all_members_serving; then
      for m in "${MEMBERS[@]}"; do log "member $m: mode '$(mode "$(member_port "$m")")'"; done
      die "zookeeper-ensemble: not all members are leader/follower"
    fi
    echo "zookeeper-ensemble: ready on 127.0.0.1:2182,2183,2184 in $(elapsed "$t0") s (cold start; leader is member $(leader || echo '?'))"
  fi
}

# member_start N: start member N and wait for it (see wait_member). A member whose JVM exits
# because it cannot load its own data directory is recovered the way an operator recovers
# a member of a healthy ensemble: its data is set aside (kept, renamed) and it starts empty,
# taking the ensemble's state from the leader. ZooKeeper 3.8.0, Debian's, cannot start on a
# transaction log a SIGKILL cut at the wrong moment (ZOOKEEPER-2332: fixed in 3.9.3); the
# HA tests kill members on purpose, and what they test is the clients and the quorum, not
# that bug.
member_start() {
  check_member "$1"
  local m=$1 dir; dir=$(member_dir "$1")
  local t0; t0=$(now_ms)
  local from; from=$(log_size "$dir/log/zookeeper.log")
  if pid_alive "$dir/pid"; then wait_member "$m" "$t0"; return; fi
  rm -f "$dir/pid"
  start_instance "$dir" "$(member_port "$m")" "$m"
  if wait_member "$m" "$t0"; then return; fi
  local cause; cause=$(start_failure "$dir/log/zookeeper.log" "$from")
  log "zookeeper member $m: its JVM exited while starting: ${cause:-no exception in $dir/log/zookeeper.log}"
  if [[ $cause != *"Unable to load database"* ]] || (( $(members_alive) * 2 <= ${#MEMBERS[@]} )); then
    tail -n 40 "$dir/log/zookeeper.log" "$dir/log/stdout.log" >&2 || true
    die "zookeeper: member $m did not start"
  fi
  local aside; aside="$dir/data/version-2.unloadable-$(date +%Y%m%dT%H%M%S)"
  mv "$dir/data/version-2" "$aside"
  log "zookeeper member $m: set its unloadable data aside in $aside; starting it empty, to sync from the leader"
  rm -f "$dir/pid"
  start_instance "$dir" "$(member_port "$m")" "$m"
  wait_member "$m" "$t0" || { tail -n 40 "$dir/log/zookeeper.log" >&2 || true; die "zookeeper: member $m did not start with empty data either"; }
}

# wait_member N T0: wait until member N serves (inside a quorum, when a majority runs) or
# answers ruok (without one: the caller is starting members one by one). Returns 1 at once
# when its JVM has exited, and dies when it is still not ready after 60 s.
wait_member() {
  local m=$1 t0=$2 dir port; dir=$(member_dir "$1"); port=$(member_port "$1")
  local ready=serving state="running without a quorum"
  if (( $(members_alive) * 2 <= ${#MEMBERS[@]} )); then ready=imok; fi
  wait_until "zookeeper member $m" 60 "$dir/log/zookeeper.log" ready_or_exited "$ready" "$port" "$dir/pid" ||
    die "zookeeper: member $m did not $([[ $ready == serving ]] && echo 'join the ensemble' || echo 'answer ruok')"
  pid_alive "$dir/pid" || return 1
  if [[ $ready == serving ]]; then state=$(mode "$port"); fi
  echo "zookeeper member $m: $state on 127.0.0.1:$port after $(elapsed "$t0") s"
}

# ready_or_exited CHECK PORT PIDFILE: CHECK PORT holds, or the process is gone.
ready_or_exited() { "$1" "$2" || ! pid_alive "$3"; }

log_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

# start_failure LOG FROM: the exception lines a start wrote into LOG after byte FROM, on one line.
start_failure() {
  tail -c +"$(($2 + 1))" "$1" 2>/dev/null | grep -E 'ERROR|Exception|Caused by' | grep -v '^[[:space:]]*at ' | head -n 6 | tr '\n' ' ' | tr -s ' '
}

member_stop() { check_member "$1"; stop_pid "zookeeper member $1" "$(member_dir "$1")/pid"; }

# member_kill N: SIGKILL, a crash with no goodbye to clients or peers.
member_kill() {
  check_member "$1"
  local pidfile; pidfile=$(member_dir "$1")/pid
  if pid_alive "$pidfile"; then
    local pid; pid=$(cat "$pidfile")
    kill -KILL "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    log "zookeeper member $1: killed (pid $pid)"
  else
    log "zookeeper member $1: not running"
  fi
  rm -f "$pidfile"
}

# down: stop all four at once (a JVM takes a couple of seconds to exit) and wait for them.
down() {
  local m
  for m in "${MEMBERS[@]}"; do stop_pid "zookeeper member $m" "$(member_dir "$m")/pid" & done
  stop_pid zookeeper "$SVC_DIR/standalone/pid" &
  wait
}

status() {
  local dir=$SVC_DIR/standalone m
  if pid_alive "$dir/pid"; then
    echo "zookeeper: pid $(cat "$dir/pid") on 127.0.0.1:$STANDALONE_PORT, mode '$(mode "$STANDALONE_PORT")'"
  else
    echo "zookeeper: stopped"
  fi
  for m in "${MEMBERS[@]}"; do
    if pid_alive "$(member_dir "$m")/pid"; then
      echo "zookeeper member $m: pid $(cat "$(member_dir "$m")/pid") on 127.0.0.1:$(member_port "$m"), mode '$(mode "$(member_port "$m")")'"
    else
      echo "zookeeper member $m: stopped"
    fi
  done
}

case ${1:-} in
  up) need_apt zookeeper default-jre-headless; up ;;
  down) down ;;
  status) status ;;
  leader) leader || die "zookeeper-ensemble: no member is leader" ;;
  member-start) need_apt zookeeper default-jre-headless; member_start "${2:-}" ;;
  member-stop) member_stop "${2:-}" ;;
  member-kill) member_kill "${2:-}" ;;
  *) echo "usage: $0 up|down|status|leader|member-start N|member-stop N|member-kill N" >&2; exit 2 ;;
esac
