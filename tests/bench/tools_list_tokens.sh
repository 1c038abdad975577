#!/usr/bin/env bash
# tools_list_tokens.sh: the first tools/list of every shipped deployment in
# Claude tokens, this build beside the build before toolsets, from git in the
# same run (tools_list_tokens.mjs). PEER_REV: the revision to build the peer
# from (default: the parent of the commit that added toolsets); PEER_SRC with
# PEER_BUILD: an existing tree and its build instead.
set -euo pipefail
SRC="${RLMCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
export RLMCP_SOURCE_DIR="$SRC"
export RLMCP_BUILD_DIR="${RLMCP_BUILD_DIR:-$SRC/build}"
work="$(mktemp -d /tmp/rlmcp-tokens-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT

if [ -z "${PEER_SRC:-}" ]; then
    rev="${PEER_REV:-}"
    if [ -z "$rev" ]; then
        change="$(git -C "$SRC" log -1 --format=%H --grep='^Toolsets: tools.toolsets')"
        [ -n "$change" ] || { echo "tools_list_tokens.sh: set PEER_REV or PEER_SRC" >&2; exit 2; }
        rev="$change^"
    fi
    echo "tools_list_tokens.sh: building the peer from $rev (runloop-mcp and the bundled plugins)" >&2
    PEER_SRC="$work/peer-src"
    PEER_BUILD="$work/peer-build"
    mkdir -p "$PEER_SRC"
    git -C "$SRC" archive "$rev" | tar -x -C "$PEER_SRC"
    cmake -S "$PEER_SRC" -B "$PEER_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/peer-cmake.log" 2>&1 ||
        { tail -20 "$work/peer-cmake.log" >&2; exit 2; }
    nice -n 10 cmake --build "$PEER_BUILD" -j2 --target runloop-mcp rlmcp_lifecycle rlmcp_exec rlmcp_browser \
        rlmcp_files rlmcp_snapshots rlmcp_blueprints rlmcp_pty rlmcp_admin rlmcp_conformance \
        rlmcp_mod_http rlmcp_mod_ws rlmcp_mod_curl rlmcp_mod_crypto >"$work/peer-build.log" 2>&1 ||
        { tail -20 "$work/peer-build.log" >&2; exit 2; }
fi
node "$SRC/tests/bench/tools_list_tokens.mjs" --peer "$PEER_SRC" --peer-build "${PEER_BUILD:-$PEER_SRC/build}"
