#!/usr/bin/env bash
# session_bench.sh - can a fresh client still open a session after 1,000
# idle ones? Our build beside the peer: the build before sessions were
# reclaimed (a full table answered 429 until idle sessions expired), built
# from git in the same run unless PEER_BIN names a binary. Both serve the
# conformance fixtures with the default max_sessions (64). Prints, per
# server: initialize accepted out of IDLE_N, initialize p50/p99 under that
# load, and how many of FRESH_N initialize requests of a fresh client got
# a session. No assertions on time: this prints figures.
# Environment: RLMCP_BUILD_DIR (default build/), IDLE_N (1000), FRESH_N (10),
# PEER_BIN (a runloop-mcp binary; its plugins in ../plugins), PEER_REV (the
# git revision to build the peer from; default: the parent of the commit
# that made sessions reclaimable).
set -euo pipefail

SRC="${RLMCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
BUILD="${RLMCP_BUILD_DIR:-$SRC/build}"
BIN="$BUILD/bin/runloop-mcp"
HERE="$SRC/tests/bench"
IDLE_N="${IDLE_N:-1000}"
FRESH_N="${FRESH_N:-10}"
[ -x "$BIN" ] || { echo "session_bench.sh: $BIN missing; build first" >&2; exit 2; }

work="$(mktemp -d /tmp/rlmcp-session-bench.XXXXXX)"
pid=""
stop() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    pid=""
}
cleanup() { status=$?; stop; rm -rf "$work"; exit $status; }
trap cleanup EXIT INT TERM

# The peer: a given binary, or the build before the change, from git.
if [ -z "${PEER_BIN:-}" ]; then
    rev="${PEER_REV:-}"
    if [ -z "$rev" ]; then
        change="$(git -C "$SRC" log -1 --format=%H --grep='sessions cannot be hoarded')"
        [ -n "$change" ] || { echo "session_bench.sh: set PEER_BIN or PEER_REV" >&2; exit 2; }
        rev="$change~1"
    fi
    echo "session_bench.sh: building the peer from $rev (runloop-mcp and the conformance plugin)" >&2
    mkdir -p "$work/peer-src"
    git -C "$SRC" archive "$rev" | tar -x -C "$work/peer-src"
    cmake -S "$work/peer-src" -B "$work/peer-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/peer-cmake.log" 2>&1 ||
        { tail -20 "$work/peer-cmake.log" >&2; exit 2; }
    nice -n 10 cmake --build "$work/peer-build" -j2 --target runloop-mcp rlmcp_conformance >"$work/peer-build.log" 2>&1 ||
        { tail -20 "$work/peer-build.log" >&2; exit 2; }
    PEER_BIN="$work/peer-build/bin/runloop-mcp"
fi

cat >"$work/bench.yaml" <<YAML
server:
  name: runloop-mcp-session-bench
  http:
    listen: 127.0.0.1:0
    max_connections: 1024
runloop:
  backend: cloud
  base_url: http://127.0.0.1:9
plugins:
  - name: conformance
YAML

declare -A R
measure() { # name binary
    local name="$1" bin="$2" port="" out
    RLMCP_PLUGIN_DIR="$(dirname "$bin")/../plugins" "$bin" -c "$work/bench.yaml" --transport http \
        2>"$work/$name.log" &
    pid=$!
    for _ in $(seq 1 600); do
        port="$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$work/$name.log" | head -1)"
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
        sleep 0.1
    done
    [ -n "$port" ] || { echo "session_bench.sh: $name did not start" >&2; exit 1; }
    out="$(node "$HERE/session_bench.mjs" "http://127.0.0.1:$port/mcp" "$IDLE_N" "$FRESH_N")"
    stop
    for k in idle_ok idle_refused init_p50_ms init_p99_ms fresh_ok fresh_tried; do
        R[$name.$k]="$(echo "$out" | node -pe "JSON.parse(require('fs').readFileSync(0)).$k")"
    done
    R[$name.fresh_status]="$(echo "$out" | node -pe "JSON.stringify(JSON.parse(require('fs').readFileSync(0)).fresh_status)")"
}

measure ours "$BIN"
measure peer "$PEER_BIN"

printf '\n%-52s %-22s %-22s\n' "figure (max_sessions 64, $IDLE_N idle first)" "runloop-mcp" "before (peer)"
printf '%-52s %-22s %-22s\n' "initialize accepted of $IDLE_N (no credentials)" "${R[ours.idle_ok]}" "${R[peer.idle_ok]}"
printf '%-52s %-22s %-22s\n' "initialize p50 / p99 under that load (ms)" \
    "${R[ours.init_p50_ms]} / ${R[ours.init_p99_ms]}" "${R[peer.init_p50_ms]} / ${R[peer.init_p99_ms]}"
printf '%-52s %-22s %-22s\n' "fresh client: sessions opened afterwards" \
    "${R[ours.fresh_ok]} of ${R[ours.fresh_tried]}" "${R[peer.fresh_ok]} of ${R[peer.fresh_tried]}"
printf '%-52s %-22s %-22s\n' "fresh client: statuses" "${R[ours.fresh_status]}" "${R[peer.fresh_status]}"
