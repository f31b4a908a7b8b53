#!/usr/bin/env bash
# services.sh up|down|status|env [SERVICE...]
# Starts (idempotently) or stops the real test services, each bound to 127.0.0.1:
#   mariadb 3307, zookeeper 2181 (+ ensemble 2182-2184), kafka 9092 (+ SASL_SSL 9094),
#   elasticsearch 9200;
#   tools installs headless Chromium and shellcheck for the tests that run them; prometheus unpacks Debian's
#   Prometheus, promtool, Alertmanager and node_exporter for the tests of deploy/prometheus;
#   formatcheck fetches the real consumers of the message-format tests (Flink's flink-json).
# `env` prints the BINLAKE_TEST_* exports that point the tests at them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ALL=(mariadb zookeeper kafka elasticsearch tools prometheus formatcheck)

cmd=${1:-}; shift || true
svcs=("$@"); ((${#svcs[@]})) || svcs=("${ALL[@]}")

case $cmd in
  up|status)
    for s in "${svcs[@]}"; do bash "$here/$s.sh" "$cmd"; done ;;
  down)
    # Stop in reverse order: clients of ZooKeeper before ZooKeeper.
    for ((i=${#svcs[@]}-1; i>=0; i--)); do bash "$here/${svcs[i]}.sh" down; done ;;
  env)
    # kafka.sh keeps the SASL_SSL listener's CA, client certificate and passwords here.
    repo=$(cd "$here/../.." && pwd)
    tlsd=${BINLAKE_TESTENV_DIR:-$repo/.testenv}/kafka/tls
    mtls=${BINLAKE_TESTENV_DIR:-$repo/.testenv}/mariadb/tls
    prom=${BINLAKE_TESTENV_DIR:-$repo/.testenv}/prometheus/root/usr/bin
    cat <<ENV
export BINLAKE_TEST_MYSQL='root@tcp(127.0.0.1:3307)/'
export BINLAKE_TEST_MYSQL_TLS_CA='$mtls/ca.pem'
export BINLAKE_TEST_ZK=127.0.0.1:2181
export BINLAKE_TEST_ZK_ENSEMBLE=127.0.0.1:2182,127.0.0.1:2183,127.0.0.1:2184
export BINLAKE_TEST_KAFKA=127.0.0.1:9092
export BINLAKE_TEST_KAFKA_SASL=127.0.0.1:9094
export BINLAKE_TEST_KAFKA_SASL_CA='$tlsd/ca.pem'
export BINLAKE_TEST_KAFKA_SASL_CLIENT_CERT='$tlsd/client.pem'
export BINLAKE_TEST_KAFKA_SASL_CLIENT_KEY='$tlsd/client.key'
export BINLAKE_TEST_KAFKA_SASL_SCRAM_USER=binlake-scram
export BINLAKE_TEST_KAFKA_SASL_SCRAM_PASSWORD_FILE='$tlsd/scram.password'
export BINLAKE_TEST_KAFKA_SASL_PLAIN_USER=binlake-plain
export BINLAKE_TEST_KAFKA_SASL_PLAIN_PASSWORD_FILE='$tlsd/plain.password'
export BINLAKE_TEST_ES=http://127.0.0.1:9200
export BINLAKE_TEST_PROMETHEUS='$prom/prometheus'
export BINLAKE_PROMTOOL='$prom/promtool'
export BINLAKE_TEST_ALERTMANAGER='$prom/prometheus-alertmanager'
export BINLAKE_TEST_NODE_EXPORTER='$prom/prometheus-node-exporter'
ENV
    ;;
  *) echo "usage: $0 up|down|status|env [${ALL[*]}]" >&2; exit 2 ;;
esac
