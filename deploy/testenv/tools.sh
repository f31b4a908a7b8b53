#!/usr/bin/env bash
# tools.sh up|down|status — Debian's tools that tests run and that are no server: headless
# Chromium for the status-page smoke test (cmd/binlake/up_integration_test.go), and the
# lint of deploy/install.sh by shellcheck (deploy/install_test.go). `up` installs each one
# that is missing; `down` has nothing to stop.
source "$(dirname "$0")/lib.sh"

# TOOLS: each the command a test runs and the Debian package that has it.
TOOLS=(chromium:chromium shellcheck:shellcheck)

version() {
  case $1 in
    chromium) chromium --version 2>/dev/null | head -1 ;;
    shellcheck) echo "shellcheck $(shellcheck --version 2>/dev/null | awk '/^version:/{print $2}')" ;;
  esac
}

case ${1:-} in
  up)
    for t in "${TOOLS[@]}"; do
      cmd=${t%%:*} pkg=${t#*:} start=$(now_ms)
      if command -v "$cmd" >/dev/null 2>&1; then
        log "tools: $(version "$cmd") already installed"
      else
        need_apt "$pkg"
        command -v "$cmd" >/dev/null 2>&1 || die "tools: Debian's $pkg did not install $cmd"
        log "tools: $(version "$cmd") installed in $(elapsed "$start") s"
      fi
    done ;;
  down) ;;
  status)
    for t in "${TOOLS[@]}"; do
      cmd=${t%%:*}
      if command -v "$cmd" >/dev/null 2>&1; then log "tools: $(version "$cmd")"; else log "tools: $cmd not installed"; fi
    done ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
