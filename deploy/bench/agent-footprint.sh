#!/usr/bin/env bash
# agent-footprint.sh: the agent's memory and CPU beside Debian's prometheus-node-exporter,
# measured the same way (VmRSS/VmHWM from /proc/PID/status, utime+stime from
# /proc/PID/stat) on the same machine at the same time.
#
#   phase 1: agent at a 1 s interval and node_exporter scraped once per second, DURATION s
#   phase 2: agent alone at the 10 s default, DURATION s (its CPU is the target figure)
#
# Two builds of the agent run side by side: `binlake agent` (the one binary with every role
# linked in) and `binlake-agent` (the same command built with -tags agentonly, `make
# build-agent`, the build meant for the hosts). The difference is the cost of the one binary.
#
# Usage: deploy/bench/agent-footprint.sh            (make bench-agent)
# Env:   BIN (agent binary; built when unset), DURATION (60), SINK (kafka|http; kafka when
#        127.0.0.1:9092 answers), NE_PORT (9111), AGENT_ENV (extra env for the agent, e.g.
#        "GOGC=50").
# Prints a Markdown report on stdout; logs go to $WORK (kept on failure).
set -euo pipefail

DURATION=${DURATION:-60}
NE_PORT=${NE_PORT:-9111}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/agent-footprint.XXXXXX)
HZ=$(getconf CLK_TCK)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

die() { echo "agent-footprint: $*" >&2; exit 1; }

# --- node_exporter -----------------------------------------------------------------------
NE=$(command -v prometheus-node-exporter || true)
if [[ -z $NE ]]; then
	echo "installing prometheus-node-exporter (Debian package)..." >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus-node-exporter >"$WORK/apt.log" 2>&1 \
		|| die "apt-get install prometheus-node-exporter failed (see $WORK/apt.log)"
	NE=$(command -v prometheus-node-exporter) || die "prometheus-node-exporter not on PATH after install"
fi

# --- the agent ---------------------------------------------------------------------------
if [[ -z ${BIN:-} ]]; then
	BIN=$WORK/binlake
	(cd "$ROOT" && go build -trimpath -ldflags '-s -w' -o "$BIN" ./cmd/binlake) || die "go build failed"
fi
[[ -x $BIN ]] || die "no agent binary at $BIN"
SLIM=$WORK/binlake-agent-only
(cd "$ROOT" && go build -trimpath -tags agentonly -ldflags '-s -w' -o "$SLIM" ./cmd/binlake) || die "agent-only build failed"

if [[ -z ${SINK:-} ]]; then
	if (exec 3<>/dev/tcp/127.0.0.1/9092) 2>/dev/null; then SINK=kafka; else SINK=http; fi
fi
sink_yaml() {
	if [[ $SINK == kafka ]]; then
		printf 'sink:\n  kind: kafka\n  kafka:\n    brokers: [127.0.0.1:9092]\n    topic: binlake.metrics.bench\n'
	else
		printf 'sink:\n  kind: http\n  http:\n    url: http://127.0.0.1:%s/v1/metrics\n' "$HTTP_PORT"
	fi
}
if [[ $SINK == http ]]; then
	# A minimal ingest endpoint that accepts every batch (the judge's role).
	HTTP_PORT=$((NE_PORT + 1))
	python3 - "$HTTP_PORT" >"$WORK/ingest.log" 2>&1 <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
	pids+=($!)
fi

write_config() { # interval file [node]
	{
		printf 'node: %s\ninterval: %s\nhttp: {listen: "off"}\n' "${3:-bench-agent}" "$1"
		sink_yaml
		printf 'collectors:\n  host: {}\n'
	} >"$2"
}

# --- measurement helpers -------------------------------------------------------------------
cpu_ticks() { # pid -> utime+stime in clock ticks
	local stat rest
	stat=$(<"/proc/$1/stat")
	rest=${stat##*) }
	read -r -a f <<<"$rest"
	echo $((f[11] + f[12]))
}
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
alive() { kill -0 "$1" 2>/dev/null || die "$2 exited (logs in $WORK)"; }

# measure label pid... over DURATION s; while it runs, scrape node_exporter every second
# if SCRAPE=1. Prints "label cpu_pct rss_avg_kb rss_end_kb hwm_kb" per pid.
measure() {
	local i
	local -a labels=() ps=() t0=() sum=() cnt=()
	while (($#)); do labels+=("$1"); ps+=("$2"); shift 2; done
	for i in "${!ps[@]}"; do t0[i]=$(cpu_ticks "${ps[i]}"); sum[i]=0; cnt[i]=0; done
	local start end
	start=$(date +%s.%N)
	for ((s = 0; s < DURATION; s++)); do
		if [[ ${SCRAPE:-0} == 1 ]]; then
			curl -fsS -o /dev/null "http://127.0.0.1:$NE_PORT/metrics" || die "scrape of node_exporter failed"
		fi
		for i in "${!ps[@]}"; do
			alive "${ps[i]}" "${labels[i]}"
			sum[i]=$((sum[i] + $(status_kb "${ps[i]}" VmRSS)))
			cnt[i]=$((cnt[i] + 1))
		done
		sleep 1
	done
	end=$(date +%s.%N)
	for i in "${!ps[@]}"; do
		local t1 rss hwm
		t1=$(cpu_ticks "${ps[i]}")
		rss=$(status_kb "${ps[i]}" VmRSS)
		hwm=$(status_kb "${ps[i]}" VmHWM)
		awk -v l="${labels[i]}" -v d=$((t1 - t0[i])) -v hz="$HZ" -v s="$start" -v e="$end" \
			-v avg=$((sum[i] / cnt[i])) -v rss="$rss" -v hwm="$hwm" \
			'BEGIN { printf "%s\t%.3f\t%d\t%d\t%d\n", l, 100 * d / hz / (e - s), avg, rss, hwm }'
	done
}

# --- phase 1: agent at 1 s beside node_exporter scraped every second ------------------------
write_config 1s "$WORK/agent-1s.yaml"
write_config 1s "$WORK/slim-1s.yaml" bench-agent-only
"$NE" --web.listen-address="127.0.0.1:$NE_PORT" >"$WORK/node_exporter.log" 2>&1 &
NE_PID=$!
pids+=("$NE_PID")
env ${AGENT_ENV:-} "$BIN" agent -config "$WORK/agent-1s.yaml" >"$WORK/agent-1s.log" 2>&1 &
AGENT_PID=$!
pids+=("$AGENT_PID")
env ${AGENT_ENV:-} "$SLIM" agent -config "$WORK/slim-1s.yaml" >"$WORK/slim-1s.log" 2>&1 &
SLIM_PID=$!
pids+=("$SLIM_PID")
for _ in $(seq 50); do
	curl -fsS -o /dev/null "http://127.0.0.1:$NE_PORT/metrics" 2>/dev/null && break
	sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$NE_PORT/metrics" || die "node_exporter does not answer (see $WORK/node_exporter.log)"
sleep 3 # both past start-up
echo "phase 1: ${DURATION}s, agent at 1s, node_exporter scraped every 1s (sink: $SINK)" >&2
phase1=$(SCRAPE=1 measure "binlake agent" "$AGENT_PID" "binlake-agent (agentonly)" "$SLIM_PID" node_exporter "$NE_PID")
if grep -q "sink failing" "$WORK/agent-1s.log" "$WORK/slim-1s.log"; then echo "warning: an agent's sink failed during phase 1" >&2; fi
kill "$AGENT_PID" "$SLIM_PID" "$NE_PID"
wait "$AGENT_PID" "$SLIM_PID" "$NE_PID" 2>/dev/null || true

# --- phase 2: agent alone at the 10 s default ---------------------------------------------
write_config 10s "$WORK/agent-10s.yaml"
write_config 10s "$WORK/slim-10s.yaml" bench-agent-only
env ${AGENT_ENV:-} "$BIN" agent -config "$WORK/agent-10s.yaml" >"$WORK/agent-10s.log" 2>&1 &
AGENT_PID=$!
pids+=("$AGENT_PID")
env ${AGENT_ENV:-} "$SLIM" agent -config "$WORK/slim-10s.yaml" >"$WORK/slim-10s.log" 2>&1 &
SLIM_PID=$!
pids+=("$SLIM_PID")
sleep 3
echo "phase 2: ${DURATION}s, agents at 10s" >&2
phase2=$(measure "binlake agent" "$AGENT_PID" "binlake-agent (agentonly)" "$SLIM_PID")
kill "$AGENT_PID" "$SLIM_PID"
wait "$AGENT_PID" "$SLIM_PID" 2>/dev/null || true

# --- report ----------------------------------------------------------------------------------
model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
row() { awk '{ printf "| %s | %s | %.3f %% | %.1f | %.1f | %.1f |\n", t, $1, $2, $3/1024, $4/1024, $5/1024 }' FS='\t' t="$1"; }
cat <<MD
Machine: $(nproc) CPUs ($model), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM, kernel $(uname -r);
load average during the run: $(cut -d' ' -f1-3 /proc/loadavg). node_exporter: $("$NE" --version 2>&1 | head -1).
Agent: $("$BIN" version 2>&1 | head -1) ($(du -m "$BIN" | cut -f1) MB binary; agent-only build $(du -m "$SLIM" | cut -f1) MB), sink $SINK, host collector, ${AGENT_ENV:-default GC settings}. Window: ${DURATION} s per phase.

| phase | process | CPU (% of one core) | RSS mean (MiB) | RSS end (MiB) | VmHWM (MiB) |
|---|---|---|---|---|---|
$(row "1 s interval / 1 s scrape" <<<"$phase1")
$(row "10 s interval" <<<"$phase2")
MD
rm -rf "$WORK"
