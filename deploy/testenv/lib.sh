#!/usr/bin/env bash
# Shared helpers for the test-service scripts. Each service script (mariadb.sh, zookeeper.sh,
# kafka.sh, elasticsearch.sh) sources this file and implements `up`, `down` and `status`.
# The services' state lives under $TESTENV_DIR (git-ignored), one folder per service:
#   $TESTENV_DIR/<svc>/{data,log,pid}   state, logs and the pid of the process we started.
# What they are made from (jars from Maven Central, Debian's Prometheus packages, the Java
# consumers, protoc) goes into $CACHE_DIR, by default in the user's cache beside Go's and
# Maven's: every clone shares it, so a fresh clone starts its services without fetching
# ~150 MB again (~20 s of the cold start here). Each entry is named by a hash of what it is
# built from and written into a temporary folder first, then renamed into place.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TESTENV_DIR=${BINLAKE_TESTENV_DIR:-$REPO_ROOT/.testenv}
CACHE_DIR=${BINLAKE_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/binlake-testenv}
mkdir -p "$TESTENV_DIR" "$CACHE_DIR"

log() { printf '[testenv %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# now_ms prints the wall clock in milliseconds, for cold-start timings.
now_ms() { date +%s%3N; }

# elapsed SINCE_MS prints seconds since SINCE_MS with one decimal.
elapsed() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN{printf "%.1f", (b-a)/1000}'; }

# pid_alive PIDFILE: true when the pid file names a running process.
pid_alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# start_bg PIDFILE LOGFILE CMD...: start CMD detached (own session, survives this shell), record its pid.
start_bg() {
  local pidfile=$1 logfile=$2; shift 2
  mkdir -p "$(dirname "$pidfile")" "$(dirname "$logfile")"
  setsid "$@" >>"$logfile" 2>&1 < /dev/null &
  echo $! >"$pidfile"
}

# stop_pid NAME PIDFILE: stop the process we started (TERM, then KILL after 20 s). Never touches others.
stop_pid() {
  local name=$1 pidfile=$2
  if ! pid_alive "$pidfile"; then rm -f "$pidfile"; log "$name: not running"; return 0; fi
  local pid; pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then log "$name: did not stop in 20 s, killing"; kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$pidfile"
  log "$name: stopped (pid $pid)"
}

# port_open PORT: true when something accepts TCP on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_until NAME TIMEOUT_S LOGFILE CMD...: poll CMD every 0.25 s until it succeeds; on timeout
# print the log's tail and fail naming the service. Prints a progress dot every 5 s.
wait_until() {
  local name=$1 timeout=$2 logfile=$3; shift 3
  local deadline last
  deadline=$(( $(date +%s) + timeout )) last=$(date +%s)
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) >= deadline )); then
      log "$name: not ready after ${timeout}s; last lines of $logfile:"
      tail -n 30 "$logfile" >&2 || true
      return 1
    fi
    if (( $(date +%s) - last >= 5 )); then log "$name: waiting…"; last=$(date +%s); fi
    sleep 0.25
  done
}

# need_apt PKG...: install Debian packages that are missing (apt-get update once per run).
need_apt() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  log "installing Debian packages: ${missing[*]}"
  if [[ ! -f $TESTENV_DIR/.apt-updated ]]; then apt-get update -q >&2 && touch "$TESTENV_DIR/.apt-updated"; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
}

# make_server_cert CN: in the current folder, a test CA named CN (ca.pem, ca.key) and a
# server certificate it signs for 127.0.0.1 and localhost (server.pem, server.key).
make_server_cert() {
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3650 -subj "/CN=$1" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 3650 -extfile server.ext
  rm -f server.csr server.ext
}

# make_once DIR LOGFILE WHAT FN: runs FN in a fresh private folder that becomes DIR once FN
# succeeds, unless DIR is complete already (test certificates and passwords, made on the
# first run only); WHAT says what is made, FN's output goes to LOGFILE.
make_once() {
  local dir=$1 logf=$2 what=$3 fn=$4
  [[ -f $dir/.complete ]] && return 0
  command -v openssl >/dev/null 2>&1 || need_apt openssl
  local tmp=$dir.tmp
  rm -rf "$tmp"; mkdir -p "$tmp" "$(dirname "$logf")"; chmod 700 "$tmp"
  log "making $what in $dir (first run only)"
  ( cd "$tmp" && "$fn" ) >"$logf" 2>&1 || { tail -n 20 "$logf" >&2; die "making $what failed; see $logf"; }
  touch "$tmp/.complete"
  rm -rf "$dir"; mv "$tmp" "$dir"
}
