#!/usr/bin/env bash
# browser.sh up|down|status — headless Chromium for the status-page smoke test
# (cmd/binlake/up_integration_test.go). Not a server: `up` installs Debian's chromium when it
# is missing; `down` has nothing to stop.
source "$(dirname "$0")/lib.sh"

case ${1:-} in
  up)
    start=$(now_ms)
    if command -v chromium >/dev/null 2>&1; then
      log "browser: $(chromium --version 2>/dev/null | head -1) already installed"
    else
      need_apt chromium
      log "browser: $(chromium --version 2>/dev/null | head -1) installed in $(elapsed "$start") s"
    fi ;;
  down) ;;
  status)
    if command -v chromium >/dev/null 2>&1; then log "browser: $(chromium --version 2>/dev/null | head -1)"
    else log "browser: chromium not installed"; fi ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
