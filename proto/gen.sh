#!/usr/bin/env bash
# proto/gen.sh [OUT_DIR]: generate the Go code of the .proto files under proto/ (make proto).
# protoc comes from Maven Central (com.google.protobuf:protoc, the build Google publishes for
# each platform), fetched once with Maven into the test environment's cache, as the test
# services' jars are; protoc-gen-go is built from the google.golang.org/protobuf version
# go.mod pins, so the generated code matches the runtime the binary links. OUT_DIR
# (default: the repository) lets a test generate into a scratch folder and compare.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT}
PROTOC_VERSION=4.29.3 # protoc 29.3
CACHE=${BINLAKE_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/binlake-testenv}/protoc-$PROTOC_VERSION
log() { printf '[proto %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

case $(uname -m) in
  x86_64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch_64 ;;
  *) log "ERROR: no protoc build for $(uname -m) on Maven Central"; exit 1 ;;
esac
PROTOC=$CACHE/protoc
if [[ ! -x $PROTOC ]]; then
  command -v mvn >/dev/null 2>&1 || { log "ERROR: Maven (mvn) is needed to fetch protoc"; exit 1; }
  log "fetching protoc $PROTOC_VERSION from Maven Central into $CACHE (first run only, ~10 MB)"
  rm -rf "$CACHE.tmp"; mkdir -p "$CACHE.tmp"
  mvn -B -q dependency:copy -Dartifact="com.google.protobuf:protoc:$PROTOC_VERSION:exe:linux-$arch" \
    -DoutputDirectory="$CACHE.tmp" >"$CACHE.tmp/maven.log" 2>&1 ||
    { tail -n 20 "$CACHE.tmp/maven.log" >&2; log "ERROR: Maven could not fetch protoc"; exit 1; }
  mv "$CACHE.tmp"/protoc-*.exe "$CACHE.tmp/protoc"
  chmod +x "$CACHE.tmp/protoc"
  rm -rf "$CACHE"; mv "$CACHE.tmp" "$CACHE"
fi
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
(cd "$ROOT" && go build -o "$BIN/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)
mkdir -p "$OUT"
cd "$ROOT/proto"
"$PROTOC" --plugin=protoc-gen-go="$BIN/protoc-gen-go" --go_out="$OUT" \
  --go_opt=module=github.com/binlake/binlake binlake/v1/row.proto canal/canal.proto
