#!/usr/bin/env bash
# inspector.sh - the MCP Inspector CLI (@modelcontextprotocol/inspector-cli,
# a second real client besides the SDK) against runloop-mcp with
# conf/conformance.yaml: tools/list and a tools/call, over Streamable HTTP
# and over stdio. Environment: RLMCP_BUILD_DIR (default build/).
set -euo pipefail

SRC="${RLMCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
BUILD="${RLMCP_BUILD_DIR:-$SRC/build}"
BIN="$BUILD/bin/runloop-mcp"
CONF="$SRC/conf/conformance.yaml"
INSPECTOR="$SRC/tests/node_modules/.bin/mcp-inspector-cli"
[ -x "$BIN" ] || { echo "inspector.sh: $BIN not built" >&2; exit 2; }
[ -x "$INSPECTOR" ] || { echo "inspector.sh: $INSPECTOR missing (cd tests && npm ci)" >&2; exit 2; }

work="$(mktemp -d /tmp/rlmcp-inspector.XXXXXX)"
pid=""
cleanup() {
    status=$?
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    if [ -f "$work/state/devboxd.pid" ]; then
        dpid="$(awk '/^pid /{print $2; exit}' "$work/state/devboxd.pid" 2>/dev/null || true)"
        if [ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null; then
            # Its sandboxes' disks (the warm pool's too) are mounted in the
            # state dir until it has stopped: wait before removing it.
            for _ in $(seq 1 300); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
        fi
    fi
    [ $status -ne 0 ] && [ -f "$work/server.log" ] && tail -n 30 "$work/server.log" >&2
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT INT TERM
export RLMCP_STATE_DIR="$work/state"
export RLMCP_PLUGIN_DIR="$BUILD/plugins"
# inspector-cli 1.0.3 picks its package.json by testing "../package.json"
# against the working directory: run it where that file exists.
cd "$SRC/tests/e2e"

fail() { echo "inspector.sh: FAIL: $*" >&2; exit 1; }
# expect NAME FILE JS-CONDITION: the file's JSON must satisfy the condition.
expect() {
    node -e '
        const fs = require("fs");
        const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        const ok = new Function("r", "return (" + process.argv[2] + ");")(r);
        if (!ok) { console.error(JSON.stringify(r).slice(0, 600)); process.exit(1); }
    ' "$2" "$3" || fail "$1"
    echo "ok: $1"
}

# ---- HTTP -------------------------------------------------------------------
"$BIN" -c "$CONF" --transport http --listen 127.0.0.1:0 2>"$work/server.log" &
pid=$!
port=""
for _ in $(seq 1 600); do
    port="$(grep -oE '\(port [0-9]+\)' "$work/server.log" | grep -oE '[0-9]+' | tail -n 1 || true)"
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "the server exited at start"
    sleep 0.1
done
[ -n "$port" ] || fail "the server did not listen within 60 s"
url="http://127.0.0.1:$port/mcp"

"$INSPECTOR" --cli "$url" --transport http --method tools/list >"$work/h-list.json" 2>"$work/h-list.err" ||
    fail "tools/list over HTTP: $(tail -n 3 "$work/h-list.err")"
expect "HTTP tools/list lists the fixtures" "$work/h-list.json" \
    'r.tools.some(t => t.name === "test_simple_text") && r.tools.every(t => t.description && t.inputSchema)'
"$INSPECTOR" --cli "$url" --transport http --method tools/call --tool-name test_sampling \
    --tool-arg prompt=hello >"$work/h-call.json" 2>"$work/h-call.err" ||
    fail "tools/call over HTTP: $(tail -n 3 "$work/h-call.err")"
# The inspector declares no sampling capability: the tool says so, as an error result.
expect "HTTP tools/call test_sampling without sampling capability -> isError" "$work/h-call.json" \
    'r.isError === true && /does not support sampling/.test(r.content[0].text)'
"$INSPECTOR" --cli "$url" --transport http --method tools/call --tool-name test_tool_with_progress \
    >"$work/h-call2.json" 2>"$work/h-call2.err" || fail "tools/call over HTTP: $(tail -n 3 "$work/h-call2.err")"
expect "HTTP tools/call test_tool_with_progress" "$work/h-call2.json" \
    'r.isError !== true && /Progress tool completed/.test(r.content[0].text)'
"$INSPECTOR" --cli "$url" --transport http --method resources/read --uri test://static-text \
    >"$work/h-res.json" 2>"$work/h-res.err" || fail "resources/read over HTTP"
expect "HTTP resources/read" "$work/h-res.json" 'r.contents[0].text.length > 0'
kill -TERM "$pid"
wait "$pid" || fail "the HTTP server did not exit cleanly"
pid=""

# ---- stdio ------------------------------------------------------------------
# The inspector passes only a few variables to its child: hand over ours.
# It also takes --transport for itself, so the server gets the short -t.
envs=(-e "RLMCP_STATE_DIR=$RLMCP_STATE_DIR" -e "RLMCP_PLUGIN_DIR=$RLMCP_PLUGIN_DIR")
"$INSPECTOR" --cli "${envs[@]}" "$BIN" -c "$CONF" -t stdio --method tools/list \
    >"$work/s-list.json" 2>"$work/s-list.err" || fail "tools/list over stdio: $(tail -n 3 "$work/s-list.err")"
expect "stdio tools/list lists the fixtures" "$work/s-list.json" \
    'r.tools.some(t => t.name === "test_tool_with_logging") && r.tools.length >= 14'
"$INSPECTOR" --cli "${envs[@]}" "$BIN" -c "$CONF" -t stdio --method tools/call \
    --tool-name test_simple_text >"$work/s-call.json" 2>"$work/s-call.err" ||
    fail "tools/call over stdio: $(tail -n 3 "$work/s-call.err")"
expect "stdio tools/call test_simple_text" "$work/s-call.json" \
    'r.isError !== true && r.content[0].text === "This is a simple text response for testing."'
# A sanitizer build reports through the servers' stderr.
if grep -lE 'AddressSanitizer|LeakSanitizer|runtime error:' "$work"/*.err "$work/server.log" 2>/dev/null; then
    fail "sanitizer report in the server output"
fi
echo "inspector.sh: all passed"
