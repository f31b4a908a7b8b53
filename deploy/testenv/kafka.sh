#!/usr/bin/env bash
# kafka.sh up|down|status
# kafka.sh private-run DIR PORT CONTROLLER_PORT | private-format DIR PORT CONTROLLER_PORT | private-wait DIR PORT
# A single Apache Kafka 4 broker for the integration tests (BINLAKE_TEST_KAFKA=127.0.0.1:9092),
# in KRaft combined mode (broker and controller in one JVM, controller on 127.0.0.1:9093).
# The same broker has a second listener, SASL_SSL on 127.0.0.1:9094 (BINLAKE_TEST_KAFKA_SASL),
# for the transport-security tests: TLS with a server certificate of a test CA (client
# certificates of that CA are requested, not required) and SASL PLAIN, SCRAM-SHA-256 and
# SCRAM-SHA-512. The CA, the server's keystore, a client certificate and the users' random
# passwords are made once with openssl and kept in $TESTENV_DIR/kafka/tls/; the PLAIN user
# (binlake-plain) is in the listener's JAAS config, the SCRAM user (binlake-scram) is set
# through the Admin API (kafka/ScramUsers.java, compiled once) after every start.
# `services.sh env` exports the address, the CA and the users (BINLAKE_TEST_KAFKA_SASL_*).
# The private-* subcommands run another such broker, of one test alone, with its state in DIR
# and its own ports: fault tests stop and restart it while the shared one keeps serving the
# other tests (internal/testenv.StartKafkaBroker). private-run runs it in the foreground
# (the JVM replaces the script, so the caller's signals reach the broker itself);
# private-wait returns once it serves; private-format only formats DIR (tests of the format).
# Its jars come from Maven Central through deploy/testenv/kafka/pom.xml (Maven's own local
# repository, ~/.m2 by default) and are copied once into $CACHE_DIR/kafka/lib-<pom hash>/, so
# re-runs neither fetch nor run Maven. A class-data-sharing archive of the broker's classes is
# written there when a broker stops and used by later starts (JVM start-up is most of the wait).
# State lives under $TESTENV_DIR/kafka/: data/ (formatted once, kept across down/up until it holds more than KAFKA_PRUNE_PARTITIONS partitions: prune_data), log/
# (server.log, stdout.log, maven.log), pid and server.properties (rewritten on every start).
source "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
POM=$HERE/kafka/pom.xml
START_TIMEOUT=120
STOP_TIMEOUT=60

# The lib folder is keyed by the pom's hash: editing the pom (a new Kafka version) refetches.
LIB=$CACHE_DIR/kafka/lib-$(sha256sum "$POM" | cut -c1-12)

# set_broker DIR PORT CONTROLLER_PORT [SASL_PORT]: which broker the functions below act on,
# its state folder and its ports. Only the shared broker has the SASL_SSL listener.
set_broker() {
  SVC_DIR=$1 PORT=$2 CONTROLLER_PORT=$3 SASL_PORT=${4:-}
  DATA=$SVC_DIR/data LOGD=$SVC_DIR/log PIDF=$SVC_DIR/pid CONF=$SVC_DIR/server.properties
}
set_broker "$TESTENV_DIR/kafka" 9092 9093 9094

# The SASL_SSL listener's material (shared broker only); services.sh env names the same files.
TLSD=$TESTENV_DIR/kafka/tls
KEYSTORE_PASS=binlake-testenv
SCRAM_USER=binlake-scram
PLAIN_USER=binlake-plain

# tls_files: the test CA, the broker's certificate (127.0.0.1 and localhost) in a PKCS12
# keystore, a client certificate and the two users' passwords.
tls_files() {
  make_server_cert "binlake testenv CA"
  openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem -name kafka \
    -out server.p12 -passout "pass:$KEYSTORE_PASS"
  openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=binlake-testenv-client"
  printf 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' >client.ext
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 3650 -extfile client.ext
  rm -f ./*.csr ./*.ext
  # URL-safe, no quoting needed in the JAAS config.
  head -c 18 /dev/urandom | base64 | tr '+/' '-_' >scram.password
  head -c 18 /dev/urandom | base64 | tr '+/' '-_' >plain.password
  chmod 600 ./*.key ./*.password server.p12
}

# make_tls: tls_files in $TLSD, once.
make_tls() { make_once "$TLSD" "$LOGD/tls.log" "kafka's test CA, certificates and SASL passwords" tls_files; }

# set_scram_user: create or update the SCRAM user through the PLAINTEXT listener. The tool is
# compiled once, keyed by its source's hash.
set_scram_user() {
  local src=$HERE/kafka/ScramUsers.java tools
  tools=$CACHE_DIR/kafka/tools-$(sha256sum "$src" | cut -c1-12)
  if [[ ! -f $tools/ScramUsers.class ]]; then
    command -v javac >/dev/null 2>&1 || need_apt default-jdk-headless
    rm -rf "$tools.tmp"; mkdir -p "$tools.tmp"
    javac -d "$tools.tmp" -cp "$LIB/*" "$src" >"$LOGD/scram.log" 2>&1 ||
      { cat "$LOGD/scram.log" >&2; die "kafka: compiling $src failed"; }
    rm -rf "$tools"; mv "$tools.tmp" "$tools"
  fi
  java -Xmx128m -Dlog4j2.level=ERROR -cp "$LIB/*:$tools" ScramUsers "127.0.0.1:$PORT" "$SCRAM_USER" "$TLSD/scram.password" \
    >>"$LOGD/scram.log" 2>&1 || { tail -n 20 "$LOGD/scram.log" >&2; die "kafka: setting the SCRAM user failed; see $LOGD/scram.log"; }
}

# sasl_ready: the SASL_SSL listener accepts connections (the broker is started by then).
sasl_ready() { port_open "$SASL_PORT"; }

need_tools() {
  command -v java >/dev/null 2>&1 || need_apt default-jre-headless
  command -v mvn >/dev/null 2>&1 || need_apt maven
  local props major
  props=$(java -XshowSettings:properties -version 2>&1)
  major=$(sed -n 's/^ *java.specification.version = //p' <<<"$props")
  JAVA_RUNTIME=$(sed -n 's/^ *java.runtime.version = //p' <<<"$props")
  [[ ${major%%.*} =~ ^[0-9]+$ ]] && (( ${major%%.*} >= 17 )) ||
    die "kafka: Kafka 4 needs Java 17 or newer, but \`java\` is version '${major:-unknown}'"
}

# fetch_jars: copy kafka_2.13 and its runtime dependencies into $LIB, once. Maven's full
# output goes to log/maven.log; the terminal gets a count of downloaded files as progress.
fetch_jars() {
  [[ -f $LIB/.complete ]] && return 0
  mkdir -p "$LOGD"
  local mlog=$LOGD/maven.log t0 tmp=$LIB.tmp rc
  t0=$(now_ms)
  log "kafka: fetching the Apache Kafka jars from Maven Central into $LIB (first run only, ~45 MB; full output in $mlog)"
  rm -rf "$tmp"
  set +o pipefail
  mvn -B -f "$POM" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1 | tee "$mlog" |
    awk '/Downloaded from/ { n++; if (n % 40 == 0) { printf "[testenv] kafka: %d files downloaded…\n", n > "/dev/stderr"; fflush("/dev/stderr") } }'
  rc=${PIPESTATUS[0]}
  set -o pipefail
  if (( rc != 0 )) || ! ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1; then
    grep -E '^\[ERROR\]' "$mlog" | head -n 20 >&2 || true
    die "kafka: Maven could not fetch the Kafka jars (exit $rc); see $mlog"
  fi
  touch "$tmp/.complete"
  rm -rf "$LIB"; mv "$tmp" "$LIB"
  log "kafka: jars fetched in $(elapsed "$t0") s ($(ls "$LIB"/*.jar | wc -l) jars)"
}

write_conf() {
  mkdir -p "$DATA" "$LOGD"
  local listeners="PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT"
  local advertised="PLAINTEXT://127.0.0.1:$PORT" map="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  if [[ -n $SASL_PORT ]]; then
    listeners+=",SASL_SSL://127.0.0.1:$SASL_PORT"
    advertised+=",SASL_SSL://127.0.0.1:$SASL_PORT"
    map+=",SASL_SSL:SASL_SSL"
  fi
  cat >"$CONF" <<CFG
# Written by deploy/testenv/kafka.sh on every start; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$map
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$DATA
# Tests create their topics explicitly, as production does: a typo must fail, not create a topic.
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Fewer internal partitions than the default 50: five times less work (and open files) when
# the first consumer group or transaction makes the broker create its internal topic.
offsets.topic.num.partitions=10
transaction.state.log.num.partitions=10
# Consumer groups of the tests start at once instead of after the default 3 s.
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
CFG
  [[ -n $SASL_PORT ]] || return 0
  local plain_pw; plain_pw=$(cat "$TLSD/plain.password")
  cat >>"$CONF" <<CFG
# The SASL_SSL listener of the transport-security tests (see the script's header).
listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="$PLAIN_USER" password="$plain_pw" user_$PLAIN_USER="$plain_pw";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$TLSD/server.p12
listener.name.sasl_ssl.ssl.keystore.password=$KEYSTORE_PASS
listener.name.sasl_ssl.ssl.key.password=$KEYSTORE_PASS
listener.name.sasl_ssl.ssl.truststore.type=PEM
listener.name.sasl_ssl.ssl.truststore.location=$TLSD/ca.pem
listener.name.sasl_ssl.ssl.client.auth=requested
CFG
  chmod 600 "$CONF"
}

# format_storage: give the data folder its cluster id and metadata log, only the first time,
# so topics and offsets survive down/up. BINLAKE_KAFKA_CLUSTER_ID sets the id instead of a
# random one (the test of an id that begins with '-').
format_storage() {
  [[ -f $DATA/meta.properties ]] && return 0
  # A Kafka cluster id is 16 random bytes in URL-safe base64 without padding (22 characters).
  local cid=${BINLAKE_KAFKA_CLUSTER_ID:-}
  [[ -n $cid ]] || cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  log "kafka: formatting $DATA with cluster id $cid"
  # --cluster-id=ID, one argument: as `-t ID`, an id beginning with '-' (one in 64) was read
  # as an option and the format failed ("argument --cluster-id/-t: expected one argument").
  java -Xmx256m -XX:ErrorFile="$LOGD/hs_err_pid%p.log" -Dlog4j2.configurationFile="$HERE/kafka/log4j2.properties" -Dkafka.logs.dir="$LOGD" \
    -cp "$LIB/*" kafka.tools.StorageTool format --ignore-formatted --cluster-id="$cid" -c "$CONF" \
    >>"$LOGD/format.log" 2>&1 || { tail -n 20 "$LOGD/format.log" >&2; die "kafka: formatting $DATA failed; see $LOGD/format.log"; }
}

# metadata_ok: send a Metadata request (v4, all topics) to 127.0.0.1:$PORT and check that the
# answer lists broker 1 at 127.0.0.1:$PORT. A KRaft broker lists itself only once it has
# registered with the controller and been unfenced, so this is "ready to serve", not "port open".
metadata_ok() {
  local hex
  hex=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    # size 15 | api_key 3 | version 4 | correlation id 2 | client id null | topics null | no auto-create
    printf "\x00\x00\x00\x0f\x00\x03\x00\x04\x00\x00\x00\x02\xff\xff\xff\xff\xff\xff\x00" >&3
    head -c 35 <&3' _ "$PORT" 2>/dev/null | od -An -tx1 | tr -d ' \n') || return 1
  # size | correlation 2 | throttle 0 | 1 broker | node 1 | host "127.0.0.1" | port 9092
  [[ $hex == ????????"00000002""00000000""00000001""00000001""0009""3132372e302e302e31"$(printf %08x "$PORT") ]]
}

# coordinator_ok: send FindCoordinator (v1, group "binlake-testenv") and check error code 0.
# On a fresh broker the first such request makes it create __consumer_offsets; waiting for it
# here keeps that (seconds on a busy machine) out of the first consumer-group test's deadline.
coordinator_ok() {
  local hex
  hex=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    # size 28 | api_key 10 | version 1 | correlation id 3 | client id null | key | key type group
    printf "\x00\x00\x00\x1c\x00\x0a\x00\x01\x00\x00\x00\x03\xff\xff\x00\x0fbinlake-testenv\x00" >&3
    head -c 14 <&3' _ "$PORT" 2>/dev/null | od -An -tx1 | tr -d ' \n') || return 1
  # size | correlation 3 | throttle 0 | error 0
  [[ $hex == ????????"00000003""00000000""0000" ]]
}

# jvm_cds_flags CLASSPATH: class-data sharing for the broker's ~10,000 classes, set in
# CDS_FLAGS. A broker started without an archive dumps one into broker-*.jsa.new when it stops
# (ArchiveClassesAtExit); the next start checks that file with -Xshare:on (a broker killed
# while dumping leaves a truncated one, on which the JVM crashes) and only then renames it for
# use. Mapping the archive roughly halves the JVM's class-loading time on a busy 2-core machine.
# Private brokers use the archive but never dump one (CDS_DUMP=0): the dump adds ~15 s to
# the stop that a fault test times, and several of them may stop at once.
CDS_DUMP=1
jvm_cds_flags() {
  local cp=$1 jsa
  jsa=$LIB/broker-$(sha256sum <<<"$JAVA_RUNTIME $(command -v java) $cp" | cut -c1-12).jsa
  if [[ -f $jsa.new ]]; then
    if java -XX:SharedArchiveFile="$jsa.new" -Xshare:on -XX:ErrorFile="$LOGD/cds-check-hs_err.log" \
      -cp "$cp" -version >/dev/null 2>&1; then
      mv -f "$jsa.new" "$jsa"
    else
      log "kafka: discarding an unusable class-data archive ($jsa.new)"
      rm -f "$jsa.new" "$LOGD/cds-check-hs_err.log"
    fi
  fi
  if [[ -f $jsa ]]; then CDS_FLAGS=("-XX:SharedArchiveFile=$jsa" -Xshare:auto)
  elif [[ $CDS_DUMP == 1 ]]; then CDS_FLAGS=("-XX:ArchiveClassesAtExit=$jsa.new")
  else CDS_FLAGS=(); fi
}

# started_or_dead: stops the wait as soon as the broker serves or its JVM has exited.
started_or_dead() { ! pid_alive "$PIDF" || metadata_ok; }

# prepare: everything before the broker's JVM starts: tools, jars, server.properties, the
# formatted data folder and the class-data archive. The broker's command is left in
# BROKER_CMD.
prepare() {
  need_tools
  fetch_jars
  [[ -z $SASL_PORT ]] || make_tls
  write_conf
  format_storage
  # An explicit, sorted class path (not lib/*): the CDS archive is only valid for the same one.
  local cp; cp=$(ls "$LIB"/*.jar | LC_ALL=C sort | paste -sd:)
  jvm_cds_flags "$cp"
  # -Xmx512m: a test broker holds little; the team's services share 2 cores and one machine.
  BROKER_CMD=(java "${CDS_FLAGS[@]}" -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:+ExitOnOutOfMemoryError -XX:ErrorFile="$LOGD/hs_err_pid%p.log" -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true
    -Dlog4j2.configurationFile="$HERE/kafka/log4j2.properties" -Dkafka.logs.dir="$LOGD"
    -cp "$cp" kafka.Kafka "$CONF")
}

# ports_free: fail when another process holds one of the broker's ports.
ports_free() {
  local p; for p in "$PORT" "$CONTROLLER_PORT"; do
    port_open "$p" && die "kafka: 127.0.0.1:$p is taken by a process we did not start (no live pid in $PIDF)"
  done
  return 0
}

# wait_ready: wait until the broker serves and its group coordinator is up; fail with its
# logs when the JVM exits first.
wait_ready() {
  wait_until kafka "$START_TIMEOUT" "$LOGD/server.log" started_or_dead || die "kafka: broker did not become ready on 127.0.0.1:$PORT"
  if ! pid_alive "$PIDF"; then
    log "kafka: the broker exited; last lines of $LOGD/server.log and stdout.log:"
    tail -n 30 "$LOGD/server.log" >&2 2>/dev/null || true
    tail -n 10 "$LOGD/stdout.log" >&2 2>/dev/null || true
    rm -f "$PIDF"
    die "kafka: broker exited during start"
  fi
  wait_until kafka 60 "$LOGD/server.log" coordinator_ok || die "kafka: the group coordinator (__consumer_offsets) did not come up"
}

# prune_data: the shared broker's data folder keeps the topics of every test run so far
# (each test makes topics of its own, none is kept on purpose). Past KAFKA_PRUNE_PARTITIONS
# partition folders (2000) a start spends minutes loading them (3,361 took the first `up`
# past its timeout), so the broker starts on an empty folder instead, and says so.
# KAFKA_PRUNE_PARTITIONS=0 keeps the folder whatever its size.
prune_data() {
  local limit=${KAFKA_PRUNE_PARTITIONS:-2000} n
  [[ $limit =~ ^[0-9]+$ ]] || die "kafka: KAFKA_PRUNE_PARTITIONS=$limit: want a number of partitions (0 keeps every one)"
  (( limit > 0 )) && [[ -d $DATA ]] || return 0
  n=$(find "$DATA" -mindepth 1 -maxdepth 1 -type d -name '*-[0-9]*' | wc -l)
  (( n > limit )) || return 0
  log "kafka: $n partitions of earlier test runs in $DATA, over $limit (KAFKA_PRUNE_PARTITIONS): starting on an empty data folder"
  rm -rf "$DATA"
}

up() {
  if pid_alive "$PIDF" && metadata_ok; then
    echo "kafka: already running on 127.0.0.1:$PORT (pid $(cat "$PIDF"))"
    sasl_ready || log "kafka: the running broker has no SASL_SSL listener on 127.0.0.1:$SASL_PORT (started by an older kafka.sh): run kafka.sh down && kafka.sh up to add it"
    return 0
  fi
  local t0 fetched_in=""; t0=$(now_ms)
  if ! pid_alive "$PIDF"; then
    rm -f "$PIDF"
    ports_free
    need_tools
    if [[ ! -f $LIB/.complete ]]; then
      fetch_jars; fetched_in=$(elapsed "$t0")
    fi
    t0=$(now_ms) # the cold start counts formatting and the broker's start, not the jar fetch
    prune_data
    prepare
    start_bg "$PIDF" "$LOGD/stdout.log" "${BROKER_CMD[@]}"
  fi
  wait_ready
  if [[ -f $TLSD/.complete ]] && grep -q '^listener.name.sasl_ssl' "$CONF" 2>/dev/null; then
    wait_until kafka 30 "$LOGD/server.log" sasl_ready || die "kafka: the SASL_SSL listener did not open on 127.0.0.1:$SASL_PORT"
    set_scram_user
  fi
  echo "kafka: ready on 127.0.0.1:$PORT${SASL_PORT:+ (SASL_SSL on $SASL_PORT)} in $(elapsed "$t0") s (cold start${fetched_in:+; plus $fetched_in s fetching the jars before it})"
}

# private_args DIR PORT [CONTROLLER_PORT]: check a private-* command's arguments and select
# that broker.
private_args() {
  local dir=${1:-} port=${2:-} cport=${3:-0}
  [[ -n $dir ]] || die "kafka: private-*: the broker's state folder (DIR) is required"
  [[ $port =~ ^[0-9]+$ && $cport =~ ^[0-9]+$ ]] || die "kafka: private-*: ports must be numbers, got '$port' and '$cport'"
  (( port != 9092 && port != 9093 && port != 9094 && cport != 9092 && cport != 9093 && cport != 9094 )) ||
    die "kafka: private-*: ports 9092, 9093 and 9094 belong to the shared test broker"
  mkdir -p "$dir"
  set_broker "$(cd "$dir" && pwd)" "$port" "$cport"
}

# private_run DIR PORT CONTROLLER_PORT: a broker of the caller's own in the foreground. The
# same DIR and ports start it again on the data it kept.
private_run() {
  (( $# == 3 )) || die "kafka: usage: kafka.sh private-run DIR PORT CONTROLLER_PORT"
  private_args "$@"
  CDS_DUMP=0
  pid_alive "$PIDF" && die "kafka: a broker already runs on $SVC_DIR (pid $(cat "$PIDF"))"
  ports_free
  # Written first, so that private-wait waits through the preparation too; exec keeps the
  # pid, so the file then names the JVM.
  echo $$ >"$PIDF"
  prepare
  exec "${BROKER_CMD[@]}" >>"$LOGD/stdout.log" 2>&1 </dev/null
}

# private_format DIR PORT CONTROLLER_PORT: write the configuration of a private broker and
# format its data folder, as private-run does before it starts the broker, and nothing more.
private_format() {
  (( $# == 3 )) || die "kafka: usage: kafka.sh private-format DIR PORT CONTROLLER_PORT"
  private_args "$@"
  need_tools
  fetch_jars
  write_conf
  format_storage
  echo "kafka: formatted $DATA"
}

# private_wait DIR PORT: return once the broker private-run started on DIR serves.
private_wait() {
  (( $# == 2 )) || die "kafka: usage: kafka.sh private-wait DIR PORT"
  private_args "$@"
  local t0; t0=$(now_ms)
  wait_ready
  echo "kafka: private broker ready on 127.0.0.1:$PORT in $(elapsed "$t0") s"
}

# down: TERM the broker our pid file names and wait for its controlled shutdown (and, after
# its first run, the class-data dump) for up to $STOP_TIMEOUT s before KILL. lib.sh's 20 s is
# too short for that on a loaded 2-core machine, and a killed broker recovers its logs on the
# next start.
down() {
  if ! pid_alive "$PIDF"; then rm -f "$PIDF"; log "kafka: not running"; return 0; fi
  local pid t0; pid=$(cat "$PIDF"); t0=$(now_ms)
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$(( $(date +%s) + STOP_TIMEOUT ))
  while kill -0 "$pid" 2>/dev/null && (( $(date +%s) < deadline )); do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "kafka: did not stop in $STOP_TIMEOUT s, killing pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PIDF"
  log "kafka: stopped (pid $pid) in $(elapsed "$t0") s"
}

status() {
  if pid_alive "$PIDF"; then
    if metadata_ok; then
      echo "kafka: running on 127.0.0.1:$PORT (pid $(cat "$PIDF"))$(sasl_ready && echo ", SASL_SSL on 127.0.0.1:$SASL_PORT" || echo ", no SASL_SSL listener")"
    else
      echo "kafka: pid $(cat "$PIDF") alive but not answering metadata on 127.0.0.1:$PORT"
    fi
  else
    echo "kafka: stopped"
  fi
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  private-run) shift; private_run "$@" ;;
  private-format) shift; private_format "$@" ;;
  private-wait) shift; private_wait "$@" ;;
  *) echo "usage: $0 up|down|status | private-run DIR PORT CONTROLLER_PORT | private-format DIR PORT CONTROLLER_PORT | private-wait DIR PORT" >&2; exit 2 ;;
esac
