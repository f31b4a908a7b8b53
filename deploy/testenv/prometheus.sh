#!/usr/bin/env bash
# prometheus.sh up|down|status — Debian's Prometheus tools for the tests of deploy/prometheus
# (promtool check/test rules, a live Prometheus scraping the roles): prometheus and promtool
# (2.42), prometheus-alertmanager (0.25) and prometheus-node-exporter (1.5). Not a server:
# `up` downloads the Debian packages (apt-get download) and unpacks them under
# $TESTENV_DIR/prometheus/root without installing them, so no daemon starts and nothing on
# the machine changes; the tests start their own processes on free ports. `down` has
# nothing to stop.
source "$(dirname "$0")/lib.sh"

PKGS=(prometheus prometheus-alertmanager prometheus-node-exporter)
DIR=$TESTENV_DIR/prometheus
ROOT=$DIR/root
DEBS=$CACHE_DIR/prometheus-debs

# versions prints the unpacked tools' versions on one line.
versions() {
  local p=$ROOT/usr/bin
  printf 'prometheus %s, alertmanager %s, node_exporter %s' \
    "$("$p/prometheus" --version 2>&1 | awk 'NR==1{print $3}')" \
    "$("$p/prometheus-alertmanager" --version 2>&1 | awk 'NR==1{print $3}')" \
    "$("$p/prometheus-node-exporter" --version 2>&1 | awk 'NR==1{print $3}')"
}

# Debian's Alertmanager reads its default notification templates from this fixed folder
# (a Debian patch; no flag moves it): the packages' *.tmpl files are put where they
# expect them, the same files apt would install there.
AM_TMPLS=/usr/share/prometheus/alertmanager
AM_TMPL=$AM_TMPLS/email.tmpl

ready() { [[ -x $ROOT/usr/bin/promtool && -x $ROOT/usr/bin/prometheus-alertmanager && -x $ROOT/usr/bin/prometheus-node-exporter && -f $AM_TMPL ]]; }

# place_template copies the unpacked templates to AM_TMPLS when they are missing.
place_template() {
  [[ -f $AM_TMPL && -f $AM_TMPLS/default.tmpl ]] && return 0
  mkdir -p "$AM_TMPLS" && cp "$ROOT$AM_TMPLS"/*.tmpl "$AM_TMPLS/" \
    || die "prometheus: cannot write $AM_TMPLS, which Debian's Alertmanager reads its templates from (run as root, or install prometheus-alertmanager)"
  log "prometheus: Alertmanager's templates placed in $AM_TMPLS"
}

case ${1:-} in
  up)
    start=$(now_ms)
    if [[ -x $ROOT/usr/bin/prometheus-alertmanager ]]; then place_template; fi
    if ready; then log "prometheus: $(versions) already unpacked in $ROOT"; exit 0; fi
    mkdir -p "$DEBS" "$DIR"
    if ! compgen -G "$DEBS/prometheus_*.deb" >/dev/null || ! compgen -G "$DEBS/prometheus-alertmanager_*.deb" >/dev/null \
        || ! compgen -G "$DEBS/prometheus-node-exporter_*.deb" >/dev/null; then
      log "prometheus: downloading Debian's ${PKGS[*]} (about 34 MB)"
      if [[ ! -f $TESTENV_DIR/.apt-updated ]]; then apt-get update -q >&2 && touch "$TESTENV_DIR/.apt-updated"; fi
      # apt-get download writes into the working directory; _apt cannot write the cache
      # folder, which only makes apt warn.
      (cd "$DEBS" && apt-get download -q "${PKGS[@]}" 2>&1 | grep -v 'unsandboxed' >&2) \
        || die "prometheus: apt-get download ${PKGS[*]} failed"
    fi
    rm -rf "$ROOT.tmp" && mkdir -p "$ROOT.tmp"
    for deb in "$DEBS"/*.deb; do dpkg-deb -x "$deb" "$ROOT.tmp" || die "prometheus: cannot unpack $deb"; done
    rm -rf "$ROOT" && mv "$ROOT.tmp" "$ROOT"
    place_template
    ready || die "prometheus: the packages did not hold promtool, prometheus-alertmanager and prometheus-node-exporter"
    log "prometheus: $(versions) unpacked in $ROOT in $(elapsed "$start") s" ;;
  down) ;;
  status)
    if ready; then log "prometheus: $(versions) in $ROOT"; else log "prometheus: not unpacked"; fi ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
