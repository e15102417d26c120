#!/usr/bin/env bash
# Install Flink's own tools (the `flink` CLI and the Web UI's files) for the tests that run
# them against streamkernel's REST API (tests/flink_tools.py, tests/runtime/rest/):
#   apache-flink==2.3.0           the shell scripts (pyflink/bin/flink, config.sh, ...)
#   apache-flink-libraries==2.3.0 the jars they run (pyflink/lib/flink-dist-*.jar holds web/)
# both with `pip install --no-deps --target DIR`, OUTSIDE the virtual environment: their
# pins (pandas, pyarrow, ...) never touch ours and nothing of them is importable from .venv.
# FLINK_HOME is then DIR/pyflink. The two wheels (332 MB) are downloaded once into
# WHEELS (default ~/.cache/streamkernel/flink-tools-wheels; pip's own HTTP cache kept nothing
# on our machines) and installed from there; a stamp file makes a second run a no-op. Java 17 runs the CLI: installed with Debian's package when we
# are root, otherwise the script says how (the CLI tests are then skipped with that reason).
#
# Usage: scripts/ensure_flink_tools.sh [PYTHON] [DIR]   (defaults: .venv/bin/python, .flink-tools)
#        FLINK_TOOLS_WHEELS=DIR overrides the wheel cache (a CI cache can keep it).
# A failing pip install fails (make test would hide a skipped suite otherwise).
set -u
cd "$(dirname "$0")/.."
PYTHON="${1:-.venv/bin/python}"
DIR="${2:-.flink-tools}"
FLINK_VERSION="2.3.0"
STAMP="$DIR/.installed-$FLINK_VERSION"
WHEELS="${FLINK_TOOLS_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/streamkernel/flink-tools-wheels}"
PACKAGES=("apache-flink==$FLINK_VERSION" "apache-flink-libraries==$FLINK_VERSION")

ensure_java() {
  if command -v java >/dev/null 2>&1; then
    local version
    version="$(java -version 2>&1 | head -1)"
    case "$version" in
      *\"17.*|*\"17\"*|*\"1[89].*|*\"2[0-9].*) return 0 ;;
    esac
    echo "flink-tools: Flink $FLINK_VERSION's CLI wants Java 17; found: $version" >&2
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "flink-tools: java is missing; installing Debian's openjdk-17-jre-headless ..."
    if (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1; }); then
      echo "flink-tools: installed ($(java -version 2>&1 | head -1))"
      return 0
    fi
    echo "flink-tools: apt-get install openjdk-17-jre-headless failed; the Flink CLI tests will be skipped." >&2
    return 0
  fi
  cat >&2 <<'MSG'
flink-tools: no `java`, so the tests that run Flink's CLI are skipped. To run them, install Java 17:
  Debian/Ubuntu:  sudo apt-get install openjdk-17-jre-headless
MSG
  return 0
}

ensure_java

if [ -f "$STAMP" ]; then
  exit 0
fi
echo "flink-tools: installing apache-flink==$FLINK_VERSION and apache-flink-libraries==$FLINK_VERSION (--no-deps) into $DIR ..."
rm -rf "$DIR"
mkdir -p "$DIR" "$WHEELS"
# pip download keeps a file already in WHEELS ("File was already downloaded")
if ! "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$WHEELS" "${PACKAGES[@]}"; then
  echo "flink-tools: downloading ${PACKAGES[*]} into $WHEELS failed (see above); rerun: bash scripts/ensure_flink_tools.sh" >&2
  exit 1
fi
if ! "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links "$WHEELS" \
    --target "$DIR" "${PACKAGES[@]}"; then
  echo "flink-tools: pip install into $DIR failed (see above); rerun: bash scripts/ensure_flink_tools.sh" >&2
  rm -rf "$DIR"
  exit 1
fi
for needed in pyflink/bin/flink pyflink/bin/config.sh "pyflink/lib/flink-dist-$FLINK_VERSION.jar"; do
  if [ ! -f "$DIR/$needed" ]; then
    echo "flink-tools: $DIR/$needed is missing after the install; the packages' layout changed?" >&2
    exit 1
  fi
done
touch "$STAMP"
echo "flink-tools: FLINK_HOME=$DIR/pyflink ($(du -sh "$DIR" | cut -f1))"
