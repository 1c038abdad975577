#!/usr/bin/env bash
# Idle footprint (RSS of --version and of an idle stdio deployment, the
# shared objects mapped, the first backend call's time) of this build
# beside a previous revision built in a temp dir, in the same run:
#   tests/bench/idle_rss.sh [BUILD_DIR] [PEER_REV]
# BUILD_DIR (default <repo>/build) must hold runloop-mcp, its modules and
# the hello, testtools and lifecycle plugins. PEER_REV (default d94e253,
# the last revision that linked libcurl, libcrypto, libmicrohttpd and
# libwebsockets into the host) is built (host and those plugins) in a temp
# dir; PEER_REV=none measures this build only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build}"
rev="${2:-d94e253}"
for f in "$build/bin/runloop-mcp" "$build/plugins/rlmcp_lifecycle.so" \
         "$build/plugins/rlmcp_testtools.so"; do
    [ -e "$f" ] || { echo "idle_rss: $f is missing; build first" >&2; exit 2; }
done
args=("ours=$build")
if [ "$rev" != none ]; then
    peer="${RLMCP_PEER_DIR:-${TMPDIR:-/tmp}/rlmcp-peer-$rev}"
    if [ ! -x "$peer/build/bin/runloop-mcp" ]; then
        rm -rf "$peer"
        git clone -q --no-checkout "$repo" "$peer"
        git -C "$peer" checkout -q "$rev"
        cmake -S "$peer" -B "$peer/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
        targets=(runloop-mcp rlmcp_hello rlmcp_testtools rlmcp_lifecycle)
        # Since the libraries became modules, the host needs them too.
        if grep -q "rlmcp_runtime" "$peer/CMakeLists.txt" "$peer/host/CMakeLists.txt"; then
            targets+=(rlmcp_runtime)
        fi
        cmake --build "$peer/build" -j2 --target "${targets[@]}" >/dev/null
    fi
    args+=("$rev=$peer/build")
fi
exec python3 "$here/idle_rss.py" "${args[@]}"
