#!/usr/bin/env bash
# The host's memory (RSS, PSS, USS from /proc/PID/smaps_rollup, start time;
# rounds of HTTP sessions) of this build beside a previous revision built
# in a temp dir, in the same run:
#   tests/bench/host_memory.sh [BUILD_DIR] [PEER_REV]
# BUILD_DIR (default <repo>/build) must hold runloop-mcp, devboxd and the
# plugins (target rlmcp_runtime, plus the hello and testtools fixtures).
# PEER_REV (default 244ee15: libcurl, libcrypto and the transports loaded
# from modules on first use; no malloc_trim after sessions) is built in
# ${TMPDIR:-/tmp}/rlmcp-peer-PEER_REV, or RLMCP_PEER_DIR; PEER_REV=none
# measures this build only. Environment: ROUNDS (5), SESSIONS (1000),
# ROUNDS_HTTP (4). See host_memory.py for what is measured.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$(cd "${1:-$repo/build}" && pwd)"
rev="${2:-244ee15}"
for f in "$build/bin/runloop-mcp" "$build/bin/devboxd" "$build/plugins/rlmcp_lifecycle.so" \
         "$build/plugins/rlmcp_testtools.so" "$build/plugins/rlmcp_hello.so"; do
    [ -e "$f" ] || { echo "host_memory: $f is missing; build first" >&2; exit 2; }
done
args=("ours=$build")
if [ "$rev" != none ]; then
    peer="${RLMCP_PEER_DIR:-${TMPDIR:-/tmp}/rlmcp-peer-$rev}"
    if [ ! -x "$peer/build/bin/runloop-mcp" ] || [ ! -e "$peer/build/plugins/rlmcp_testtools.so" ]; then
        echo "host_memory: building the peer from $rev in $peer" >&2
        rm -rf "$peer"
        mkdir -p "$peer/src"
        git -C "$repo" archive "$rev" | tar -x -C "$peer/src"
        cmake -S "$peer/src" -B "$peer/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$peer/cmake.log" 2>&1 ||
            { tail -20 "$peer/cmake.log" >&2; exit 2; }
        nice -n 10 cmake --build "$peer/build" -j2 --target rlmcp_runtime rlmcp_hello rlmcp_testtools \
            >"$peer/build.log" 2>&1 || { tail -20 "$peer/build.log" >&2; exit 2; }
    fi
    args+=("$rev=$peer/build")
fi
exec python3 "$here/host_memory.py" "${args[@]}"
