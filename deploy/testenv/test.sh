#!/usr/bin/env bash
# make test's runner: every test against the test services (already up, their
# BINLAKE_TEST_* variables exported), in two go test runs side by side, one report.
#
# go test -p 2 runs two test binaries at a time on 2 cores, in the order named. The suite
# keeps both cores busy (idle 9 % of a run), so what shortens it is less CPU, and runs
# that end together:
#
#   main: -race, TEST_FIRST then ./... (without TEST_SIDE and PROCESS_PKGS), -p 2; then
#         without -race the NORACE_TESTS and PROCESS_TESTS of NORACE_PKGS
#   side: -race, TEST_SIDE (the alarm: its restarts are timing-sensitive under load), -p 1
#         -parallel 1; then without -race the NORACE_TESTS and PROCESS_TESTS of
#         NORACE_SIDE_PKGS, -p 2 -parallel 2
#
# The -race runs skip PROCESS_TESTS: what they test runs as a binlake process built
# without -race, so the detector would only slow their harness (the Makefile says more).
# Running four packages at once (-p 4) instead loaded the machine to ~20 and failed the
# alarm's timing. testreport prints a line per package as it ends and, at the end, the
# failures and the ten slowest tests of both runs; every go test -json event stays in
# bin/test-events/ (main.json, side.json, norace*.json).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

GO=${GO:-go}
TEST_FLAGS=${TEST_FLAGS:--race -count=1 -parallel 4 -timeout 20m}
TEST_FIRST=${TEST_FIRST:-./judge/ ./wave/ ./internal/bus/kafka/ ./cmd/binlake/ ./deploy/ ./judge/store/elastic/ ./judge/store/}
TEST_SIDE=${TEST_SIDE:-./alarm/}
NORACE_TESTS=${NORACE_TESTS:?NORACE_TESTS: the tests run without -race too}
PROCESS_TESTS=${PROCESS_TESTS:?PROCESS_TESTS: the tests run only without -race}
PROCESS_PKGS=${PROCESS_PKGS:-}
NORACE_PKGS=${NORACE_PKGS:-}
NORACE_SIDE_PKGS=${NORACE_SIDE_PKGS:-}

events=bin/test-events
mkdir -p "$events"
rm -f "$events"/*.json
rcs=$(mktemp -d)
trap 'rm -rf "$rcs"' EXIT

"$GO" build -o bin/testreport ./internal/testenv/testreport || exit 1
# The tests that run binlake as a process (cmd/binlake's, the alarm's, the benches') share
# one build: each test binary building its own linked it five times, and the first ones
# compiled the tree side by side. .ci/run has built it already while the services started.
# -trimpath as install.sh and the Makefile build: deploy's TestInstallBuilds then links
# from these compiled packages instead of compiling the tree once more in the middle of the
# run (476 s of one of the main run's two slots in a CI run after a merge, against ~40 s).
if [[ -z ${BINLAKE_TEST_BIN:-} ]]; then
  "$GO" build -trimpath -o bin/test/binlake ./cmd/binlake || exit 1
  export BINLAKE_TEST_BIN=$PWD/bin/test/binlake
fi
# shellcheck disable=SC2086 # the package lists are word lists
side_list=$("$GO" list $TEST_SIDE $PROCESS_PKGS) || exit 1
# shellcheck disable=SC2086
main_pkgs=$("$GO" list $TEST_FIRST ./... | awk 'NR==FNR { side[$0]; next } !($0 in side) && !seen[$0]++' <(echo "$side_list") -) || exit 1

# run NAME ARGS...: go test -json ARGS, its events kept in $events/NAME.json, its exit
# status in $rcs/NAME (testreport counts failed tests and packages; a go test that fails
# otherwise, a bad flag say, fails the run through its status).
#
# The tests, and the processes and private brokers they start, run at a lower CPU priority
# (nice 5) than the shared services: on 2 cores the suite keeps the machine busy, and a
# service starved for a few seconds fails tests that have nothing to do with it (CI: every
# wave's produce requests timed out together for 4 s, and a move in the balancer's test
# paused 9 s against its 5 s bound). The services' share goes first; the tests get the rest.
run() {
  local name=$1
  shift
  nice -n "${TEST_NICE:-5}" "$GO" test -json "$@" | tee "$events/$name.json"
  echo "${PIPESTATUS[0]}" >"$rcs/$name"
}

norace() {
  local name=$1
  shift
  if (($# > 0)); then
    run "$name" -count=1 -timeout 20m -run "^($NORACE_TESTS|$PROCESS_TESTS)\$" "$@"
  fi
}

# took NAME: how long a run took since the start, on stderr (which run is the longer one
# says where shortening the suite pays).
start=$(date +%s)
took() { echo "go test ($1 run) done after $(($(date +%s) - start)) s" >&2; }

# shellcheck disable=SC2086
bin/testreport \
  <(run main $TEST_FLAGS -skip "^($PROCESS_TESTS)\$" $main_pkgs; took main; norace norace $NORACE_PKGS; took "main and norace") \
  <(run side $TEST_FLAGS -p 1 -parallel 1 -skip "^($PROCESS_TESTS)\$" $TEST_SIDE; took side; norace norace-side -p 2 -parallel 2 $NORACE_SIDE_PKGS; took "side and norace-side")
rc=$?
for f in "$rcs"/*; do
  if [[ $(cat "$f") != 0 ]]; then
    echo "go test ($(basename "$f") run) exited $(cat "$f")" >&2
    rc=1
  fi
done
for name in main side; do
  if [[ ! -s $rcs/$name ]]; then
    echo "go test ($name run) did not finish" >&2
    rc=1
  fi
done
exit "$rc"
