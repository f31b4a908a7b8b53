#!/usr/bin/env bash
# formatcheck.sh up|down|status | prepare | run FORMAT BOOTSTRAP TOPIC SPEC
# The real consumer of the JSON peer formats for the format tests
# (wave/formats_integration_test.go): formatcheck/FormatCheck.java reads a topic through
# Apache Flink's flink-json change-log formats (canal-json, debezium-json, maxwell-json)
# and prints the table state the rows reduce to (see the file's header).
# Its jars come from Maven Central through formatcheck/pom.xml (Maven's own local repository,
# ~/.m2 by default) and are copied once into $CACHE_DIR/formatcheck/lib-<hash>/ with the
# compiled class, keyed by the hash of the pom and the source: re-runs neither fetch nor
# compile. `prepare` (and `up`, as services.sh calls it: no process to start) only does that;
# `run` prepares, then runs the check (JSON on stdout); `down` has nothing to stop.
source "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
POM=$HERE/formatcheck/pom.xml
SRC=$HERE/formatcheck/FormatCheck.java
LIB=$CACHE_DIR/formatcheck/lib-$(cat "$POM" "$SRC" | sha256sum | cut -c1-12)
LOGD=$TESTENV_DIR/formatcheck/log

prepare() {
  [[ -f $LIB/.complete ]] && return 0
  command -v java >/dev/null 2>&1 || need_apt default-jre-headless
  command -v javac >/dev/null 2>&1 || need_apt default-jdk-headless
  command -v mvn >/dev/null 2>&1 || need_apt maven
  mkdir -p "$LOGD"
  local mlog=$LOGD/maven.log t0 tmp=$LIB.tmp rc
  t0=$(now_ms)
  log "formatcheck: fetching Apache Flink's flink-json and a Kafka client from Maven Central into $LIB (first run only, ~45 MB; full output in $mlog)"
  rm -rf "$tmp"
  set +o pipefail
  mvn -B -f "$POM" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1 | tee "$mlog" |
    awk '/Downloaded from/ { n++; if (n % 20 == 0) { printf "[testenv] formatcheck: %d files downloaded…\n", n > "/dev/stderr"; fflush("/dev/stderr") } }'
  rc=${PIPESTATUS[0]}
  set -o pipefail
  if (( rc != 0 )) || ! ls "$tmp"/flink-json-*.jar >/dev/null 2>&1; then
    grep -E '^\[ERROR\]' "$mlog" | head -n 20 >&2 || true
    die "formatcheck: Maven could not fetch the jars (exit $rc); see $mlog"
  fi
  mkdir -p "$tmp/classes"
  javac -d "$tmp/classes" -cp "$tmp/*" "$SRC" >"$LOGD/javac.log" 2>&1 ||
    { cat "$LOGD/javac.log" >&2; die "formatcheck: compiling $SRC failed"; }
  touch "$tmp/.complete"
  rm -rf "$LIB"; mv "$tmp" "$LIB"
  log "formatcheck: ready in $(elapsed "$t0") s ($(ls "$LIB"/*.jar | wc -l) jars)"
}

case ${1:-} in
  prepare|up) prepare ;;
  down) ;;
  status)
    if [[ -f $LIB/.complete ]]; then log "formatcheck: ready ($(ls "$LIB"/*.jar | wc -l) jars in $LIB)"
    else log "formatcheck: not fetched yet (up or the format tests fetch it)"; fi ;;
  run)
    shift
    (( $# == 4 )) || die "usage: formatcheck.sh run FORMAT BOOTSTRAP TOPIC SPEC"
    prepare
    exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$LIB/*:$LIB/classes" FormatCheck "$@"
    ;;
  *) die "usage: formatcheck.sh up|down|status | prepare | run FORMAT BOOTSTRAP TOPIC SPEC" ;;
esac
