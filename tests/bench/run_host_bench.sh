#!/usr/bin/env bash
# Run the host stdio benchmark against a build (default <repo>/build, a
# Release build gives the honest figures): tests/bench/run_host_bench.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export RLMCP_SOURCE_DIR="$repo"
export RLMCP_BUILD_DIR="${1:-${RLMCP_BUILD_DIR:-$repo/build}}"
for f in "$RLMCP_BUILD_DIR/bin/runloop-mcp" "$RLMCP_BUILD_DIR/plugins/rlmcp_hello.so" \
         "$RLMCP_BUILD_DIR/plugins/rlmcp_testtools.so"; do
    [ -e "$f" ] || { echo "run_host_bench: $f is missing; build first" >&2; exit 2; }
done
exec node "$here/host_stdio_bench.mjs" "${@:2}"
