#!/usr/bin/env bash
# javaconsumer.sh DIR: build the small Maven project in DIR (a consumer the format tests run,
# e.g. deploy/testenv/canal-consumer) and print its classpath on stdout.
# Its jars come from Maven Central (Maven's own local repository, ~/.m2 by default) and are
# copied, with its compiled classes, into $CACHE_DIR/javaconsumer/<name>-<hash of the pom and
# sources>/, once: re-runs neither fetch nor compile, and an edited pom or source rebuilds.
# Progress goes to stderr (a count of the files Maven downloads), Maven's full output to
# build/maven.log in that folder.
source "$(dirname "$0")/lib.sh"

[[ $# -eq 1 && -f $1/pom.xml ]] || die "usage: javaconsumer.sh DIR (a folder with a pom.xml)"
SRC=$(cd "$1" && pwd)
NAME=$(basename "$SRC")
HASH=$( (cd "$SRC" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-12)
OUT=$CACHE_DIR/javaconsumer/$NAME-$HASH

build() {
  command -v java >/dev/null 2>&1 || need_apt default-jdk-headless
  command -v javac >/dev/null 2>&1 || need_apt default-jdk-headless
  command -v mvn >/dev/null 2>&1 || need_apt maven
  local tmp=$OUT.tmp mlog rc t0
  rm -rf "$tmp"; mkdir -p "$tmp/lib" "$tmp/classes" "$tmp/build"
  mlog=$tmp/build/maven.log
  t0=$(now_ms)
  log "$NAME: fetching its jars from Maven Central (first run only; full output in $OUT/build/maven.log)"
  set +o pipefail
  mvn -B -f "$SRC/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/lib" 2>&1 | tee "$mlog" |
    awk -v name="$NAME" '/Downloaded from/ { n++; if (n % 40 == 0) { printf "[testenv] %s: %d files downloaded…\n", name, n > "/dev/stderr"; fflush("/dev/stderr") } }'
  rc=${PIPESTATUS[0]}
  set -o pipefail
  if (( rc != 0 )); then
    grep -E '^\[ERROR\]' "$mlog" | head -n 20 >&2 || true
    die "$NAME: Maven could not fetch the jars (exit $rc); see $mlog"
  fi
  find "$SRC/src/main/java" -name '*.java' >"$tmp/build/sources"
  javac -encoding UTF-8 --release 17 -d "$tmp/classes" -cp "$tmp/lib/*" @"$tmp/build/sources" >"$tmp/build/javac.log" 2>&1 ||
    { cat "$tmp/build/javac.log" >&2; die "$NAME: compiling failed"; }
  touch "$tmp/.complete"
  rm -rf "$OUT"; mv "$tmp" "$OUT"
  log "$NAME: built in $(elapsed "$t0") s ($(ls "$OUT"/lib/*.jar | wc -l) jars)"
}

# Tests that run side by side may ask for the same consumer at once: one builds, the others
# wait for it (flock on a file beside the folder) and then find it built.
mkdir -p "$CACHE_DIR/javaconsumer"
exec 9>"$OUT.lock"
flock 9
[[ -f $OUT/.complete ]] || build
exec 9>&-
echo "$OUT/classes:$OUT/lib/*"
