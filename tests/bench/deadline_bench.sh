#!/usr/bin/env bash
# Deadlines, a dead backend and short calls beside long ones, for this build
# beside a previous revision built in a temp dir, in the same run, through
# the fault proxy in front of one devboxd:
#   tests/bench/deadline_bench.sh [BUILD_DIR] [PEER_REV]
# BUILD_DIR (default <repo>/build) must hold runloop-mcp, the plugins and
# devboxd. PEER_REV (default 6869fa5, the last revision before call
# deadlines) is built (host and plugins only) in a temp dir; PEER_REV=none
# measures this build only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build}"
rev="${2:-6869fa5}"
for f in "$build/bin/runloop-mcp" "$build/bin/devboxd" "$build/plugins/rlmcp_exec.so"; do
    [ -e "$f" ] || { echo "deadline_bench: $f is missing; build first" >&2; exit 2; }
done
args=("ours=$build")
if [ "$rev" != none ]; then
    peer="${RLMCP_PEER_DIR:-${TMPDIR:-/tmp}/rlmcp-peer-$rev}"
    if [ ! -x "$peer/build/bin/runloop-mcp" ]; then
        rm -rf "$peer"
        git clone -q --no-checkout "$repo" "$peer"
        git -C "$peer" checkout -q "$rev"
        cmake -S "$peer" -B "$peer/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
        cmake --build "$peer/build" -j2 --target runloop-mcp rlmcp_exec rlmcp_lifecycle rlmcp_files >/dev/null
    fi
    args+=("$rev=$peer/build")
fi
exec node "$here/deadline_bench.mjs" "${args[@]}"
