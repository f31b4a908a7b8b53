#!/usr/bin/env bash
# elasticsearch.sh up|down|status
# The Elasticsearch-API engine for the integration tests (BINLAKE_TEST_ES=http://127.0.0.1:9200):
# a real Elasticsearch 7.17 node, HTTP on 127.0.0.1:9200 and transport on 127.0.0.1:9300.
#
# Elastic's distribution tarball is not on a registry we reach, but the server jar and the netty4
# plugin are on Maven Central, so the node runs embedded: elasticsearch/pom.xml fetches the jars
# and elasticsearch/EmbeddedNode.java (compiled here with javac) starts a Node with the netty4
# plugin. Both land in $CACHE_DIR/elasticsearch-<version>/, rebuilt when the pom or the launcher
# change. Elasticsearch sends `X-Elastic-Product: Elasticsearch` since 7.14, which is what
# go-elasticsearch/v8 checks before it talks to a server, so clients need no adjustment.
#
# State under $TESTENV_DIR/elasticsearch/: home/ (config), data/, log (the node's log), pid.
# Environment: BINLAKE_ES_HEAP (default 512m initial, 1g max as "512m:1g"),
#              BINLAKE_ES_TIMEOUT (readiness wait in seconds, default 180).
source "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
SRC_DIR=$HERE/elasticsearch
SVC_DIR=$TESTENV_DIR/elasticsearch
PIDFILE=$SVC_DIR/pid
LOGFILE=$SVC_DIR/log
HTTP_PORT=9200
TRANSPORT_PORT=9300
URL=http://127.0.0.1:$HTTP_PORT
ES_VERSION=$(sed -n 's:.*<es.version>\(.*\)</es.version>.*:\1:p' "$SRC_DIR/pom.xml")
[[ -n $ES_VERSION ]] || die "elasticsearch: cannot read <es.version> from $SRC_DIR/pom.xml"
DIST=$CACHE_DIR/elasticsearch-$ES_VERSION
TIMEOUT=${BINLAKE_ES_TIMEOUT:-180}
HEAP=${BINLAKE_ES_HEAP:-512m:1g}

# http_get PATH: the body of a GET on the node, failing when it does not answer 2xx.
http_get() { curl -fsS --max-time 5 "$URL$1"; }

# healthy: the node answers GET / and the cluster is at least yellow.
healthy() {
  http_get / >/dev/null &&
    http_get "/_cluster/health?wait_for_status=yellow&timeout=1s" | grep -Eq '"status":"(yellow|green)"'
}

# ensure_dist: fetch the jars and compile the launcher into the cache, once per pom+source.
ensure_dist() {
  command -v java >/dev/null && command -v javac >/dev/null || need_apt openjdk-17-jdk-headless
  command -v mvn >/dev/null || need_apt maven
  command -v curl >/dev/null || need_apt curl
  local stamp want
  want=$(cat "$SRC_DIR/pom.xml" "$SRC_DIR/EmbeddedNode.java" | sha256sum | cut -c1-16)
  stamp=$DIST/.stamp
  [[ -f $stamp && $(cat "$stamp") == "$want" ]] && return 0

  local t0 tmp; t0=$(now_ms)
  log "elasticsearch: fetching Elasticsearch $ES_VERSION jars from Maven Central into $DIST"
  tmp=$(mktemp -d "$CACHE_DIR/.elasticsearch.XXXXXX")
  # copy-dependencies writes nothing but the jars; -q keeps the log short unless it fails.
  if ! mvn -q -B -f "$SRC_DIR/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/lib" >"$tmp/mvn.log" 2>&1; then
    tail -n 40 "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    die "elasticsearch: fetching the jars with Maven failed (see above)"
  fi
  if ! javac -nowarn -d "$tmp/classes" -cp "$tmp/lib/*" "$SRC_DIR/EmbeddedNode.java" 2>"$tmp/javac.log"; then
    cat "$tmp/javac.log" >&2
    rm -rf "$tmp"
    die "elasticsearch: compiling EmbeddedNode.java failed (see above)"
  fi
  echo "$want" >"$tmp/.stamp"
  rm -rf "$DIST"
  mv "$tmp" "$DIST"
  log "elasticsearch: jars and launcher ready in $(elapsed "$t0") s"
}

# write_config: config/elasticsearch.yml and config/log4j2.properties, rewritten on every start
# so this script stays the one source of truth.
write_config() {
  local home=$SVC_DIR/home
  mkdir -p "$home/config" "$home/logs" "$home/plugins" "$home/modules" "$SVC_DIR/data"
  cat >"$home/config/elasticsearch.yml" <<YML
cluster.name: binlake-test
node.name: binlake-es
path.data: $SVC_DIR/data
path.logs: $home/logs
network.host: 127.0.0.1
http.port: $HTTP_PORT
transport.port: $TRANSPORT_PORT
discovery.type: single-node
# A nearly full disk must not flip test indices to read-only.
cluster.routing.allocation.disk.threshold_enabled: false
YML
  # Everything to stdout, which start_bg sends to $LOGFILE: one log per service.
  cat >"$home/config/log4j2.properties" <<'LOG'
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
# Deprecation warnings would be logged for every request the v8 client makes; keep them out.
logger.deprecation.name = org.elasticsearch.deprecation
logger.deprecation.level = error
LOG
}

start_node() {
  local xms=${HEAP%%:*} xmx=${HEAP##*:}
  port_open "$HTTP_PORT" && die "elasticsearch: 127.0.0.1:$HTTP_PORT is taken by a process we did not start"
  port_open "$TRANSPORT_PORT" && die "elasticsearch: 127.0.0.1:$TRANSPORT_PORT is taken by a process we did not start"
  write_config
  : >"$LOGFILE"
  # The system properties are the ones Elasticsearch's own jvm.options sets for 7.17.
  start_bg "$PIDFILE" "$LOGFILE" java "-Xms$xms" "-Xmx$xmx" -XX:+UseG1GC \
    -XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath="$SVC_DIR" \
    -Djava.io.tmpdir="$SVC_DIR/home" -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
    -Djna.nosys=true -Djava.locale.providers=SPI,COMPAT -Des.networkaddress.cache.ttl=60 \
    -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
    -Dio.netty.recycler.maxCapacityPerThread=0 -Dio.netty.allocator.numDirectArenas=0 \
    -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true -Dlog4j2.formatMsgNoLookups=true \
    -cp "$DIST/classes:$DIST/lib/*" EmbeddedNode "$SVC_DIR/home"
}

up() {
  if pid_alive "$PIDFILE" && healthy; then
    echo "elasticsearch: already running on 127.0.0.1:$HTTP_PORT (pid $(cat "$PIDFILE"), Elasticsearch $ES_VERSION)"
    return 0
  fi
  local t0; t0=$(now_ms)
  ensure_dist
  local t1; t1=$(now_ms)
  if ! pid_alive "$PIDFILE"; then
    rm -f "$PIDFILE"
    start_node
  fi
  # Fail fast when the JVM dies (EmbeddedNode prints the cause) instead of waiting out the timeout.
  alive_and_healthy() { pid_alive "$PIDFILE" || return 0; healthy; }
  if ! wait_until elasticsearch "$TIMEOUT" "$LOGFILE" alive_and_healthy || ! pid_alive "$PIDFILE"; then
    if ! pid_alive "$PIDFILE"; then
      log "elasticsearch: the JVM exited; last lines of $LOGFILE:"
      tail -n 40 "$LOGFILE" >&2 || true
    fi
    die "elasticsearch: not ready on $URL"
  fi
  local fetch=""
  (( t1 - t0 >= 1000 )) && fetch=", of which $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", (b-a)/1000}') s fetching jars"
  echo "elasticsearch: ready on 127.0.0.1:$HTTP_PORT in $(elapsed "$t0") s (cold start$fetch; Elasticsearch $ES_VERSION, pid $(cat "$PIDFILE"))"
}

status() {
  if ! pid_alive "$PIDFILE"; then
    echo "elasticsearch: not running"
    return 0
  fi
  local pid health rss
  pid=$(cat "$PIDFILE")
  health=$(http_get "/_cluster/health" 2>/dev/null | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p')
  rss=$(awk '/VmRSS/ {printf "%d MiB", $2/1024}' "/proc/$pid/status" 2>/dev/null || true)
  echo "elasticsearch: running on 127.0.0.1:$HTTP_PORT (pid $pid, Elasticsearch $ES_VERSION, health ${health:-not answering}, RSS ${rss:-?})"
}

case ${1:-} in
  up) up ;;
  down) stop_pid elasticsearch "$PIDFILE" ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
