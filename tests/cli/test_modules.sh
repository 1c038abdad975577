#!/usr/bin/env bash
# test_modules.sh BIN BUILD_DIR SOURCE_DIR - the host's optional modules
# (host/base/modules.h): --version and an idle stdio deployment map none of
# libcurl, libcrypto, libmicrohttpd, libwebsockets; an HTTP deployment and
# the first backend call load theirs; a missing module fails what needs it
# with a message naming the file, and nothing else.
set -uo pipefail

BIN=$(realpath "$1")
BUILD=$(realpath "$2")
export RLMCP_PLUGIN_DIR=$BUILD/plugins
unset RLMCP_CONFIG RLMCP_MODULE_DIR

tmp=$(mktemp -d)
server_pid=
cleanup() {
    exec 3>&- 2>/dev/null
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
has() {
    if grep -qF -- "$2" "$1"; then pass "$(basename "$1") has '$2'"; else
        fail "$(basename "$1") lacks '$2'"; sed 's/^/    | /' "$1"; fi
}
# wait_for FILE TEXT: up to 60 s
wait_for() {
    for _ in $(seq 1 600); do grep -qF -- "$2" "$1" && return 0; sleep 0.1; done
    return 1
}

cat >"$tmp/stdio.yaml" <<YAML
server:
  transport: stdio
runloop:
  backend: cloud
  base_url: http://127.0.0.1:9
  api_key: unused-key
plugins:
  - name: hello
  - name: lifecycle
YAML
sed 's/transport: stdio/transport: http\n  http:\n    listen: 127.0.0.1:0/' \
    "$tmp/stdio.yaml" >"$tmp/http.yaml"
mkdir "$tmp/empty"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
list='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
call='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_devboxes","arguments":{}}}'
libs='libcurl|libcrypto|libssl|libmicrohttpd|libgnutls|libwebsockets|libnghttp2|rlmcp_(http|ws|curl|crypto)\.so'

# --- modules present: nothing loaded until needed --------------------------
"$BIN" --version >"$tmp/out" && pass "--version" || fail "--version"
# --version exits at once: run it under the dynamic loader's own listing.
LD_DEBUG=files "$BIN" --version >/dev/null 2>"$tmp/ld"
if grep -Eq "file=.*($libs)" "$tmp/ld"; then
    fail "--version loads a protocol library"; grep -E "file=.*($libs)" "$tmp/ld" | head
else pass "--version loads no protocol library"; fi

mkfifo "$tmp/in"
"$BIN" --config "$tmp/stdio.yaml" <"$tmp/in" >"$tmp/out" 2>"$tmp/err" &
server_pid=$!
exec 3>"$tmp/in"
printf '%s\n%s\n' "$init" "$list" >&3
if wait_for "$tmp/out" '"id":2'; then pass "stdio: tools/list answered"; else fail "stdio: no tools/list answer"; fi
if grep -Eq "$libs" "/proc/$server_pid/maps"; then
    fail "idle stdio deployment maps a protocol library"; grep -Eo "/[^ ]*($libs)[^ ]*" "/proc/$server_pid/maps" | sort -u
else pass "idle stdio deployment maps no protocol library"; fi
printf '%s\n' "$call" >&3
if wait_for "$tmp/out" '"id":3'; then pass "stdio: backend call answered"; else fail "stdio: no backend call answer"; fi
if grep -q 'rlmcp_curl.so' "/proc/$server_pid/maps" && grep -q 'libcurl' "/proc/$server_pid/maps"; then
    pass "the first backend call loaded libcurl"; else fail "libcurl not loaded after a backend call"; fi
exec 3>&-
wait "$server_pid"; rc=$?; server_pid=
[ "$rc" -eq 0 ] && pass "stdio: exit 0 at EOF" || fail "stdio: exit $rc at EOF"

# An HTTP deployment loads its transport and serves MCP; it still does not
# map the WebSocket client.
"$BIN" --config "$tmp/http.yaml" </dev/null >"$tmp/out" 2>"$tmp/err" &
server_pid=$!
if wait_for "$tmp/err" "http: listening on"; then
    port=$(sed -n 's/.*http: listening on .*(port \([0-9]*\)).*/\1/p' "$tmp/err" | head -1)
    curl -s --max-time 60 -D "$tmp/headers" -o "$tmp/body" \
        -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' \
        --data "$init" "http://127.0.0.1:$port/mcp"
    has "$tmp/body" '"serverInfo"'
    if grep -iq '^mcp-session-id:' "$tmp/headers"; then pass "http: session started"; else
        fail "http: no session header"; cat "$tmp/headers"; fi
    if grep -q 'rlmcp_http.so' "/proc/$server_pid/maps" && grep -q 'libmicrohttpd' "/proc/$server_pid/maps"; then
        pass "http deployment loaded its transport"; else fail "http deployment: transport not mapped"; fi
    if grep -Eq 'libwebsockets|rlmcp_ws\.so' "/proc/$server_pid/maps"; then
        fail "idle http deployment maps the WebSocket client"; else pass "idle http deployment maps no WebSocket client"; fi
else
    fail "http deployment never listened"; sed 's/^/    | /' "$tmp/err"
fi
kill -TERM "$server_pid" 2>/dev/null
wait "$server_pid"; rc=$?; server_pid=
[ "$rc" -eq 0 ] && pass "http: exit 0 on SIGTERM" || fail "http: exit $rc on SIGTERM"

# --- modules missing ---------------------------------------------------------
RLMCP_MODULE_DIR=$tmp/empty timeout 60 "$BIN" --config "$tmp/http.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && pass "http without its module: exit 1" || fail "http without its module: exit $rc"
has "$tmp/err" "the Streamable HTTP transport is not installed: $tmp/empty/rlmcp_http.so is missing"
has "$tmp/err" "set RLMCP_MODULE_DIR"

printf '%s\n%s\n%s\n' "$init" "$list" "$call" |
    RLMCP_MODULE_DIR=$tmp/empty timeout 60 "$BIN" --config "$tmp/stdio.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && pass "stdio without modules: serves, exit 0" || fail "stdio without modules: exit $rc"
has "$tmp/out" '"id":2'
if grep '"id":3' "$tmp/out" | grep -q '"isError":true'; then pass "backend call is a tool error"; else
    fail "backend call without libcurl: no tool error"; cat "$tmp/out"; fi
has "$tmp/err" "the HTTP client (libcurl) is not installed: $tmp/empty/rlmcp_curl.so is missing"

# A module of another build is refused, not used.
mkdir "$tmp/other"
cp "$BUILD/lib/runloop-mcp/modules/rlmcp_http.so" "$tmp/other/"
# Same size, another version string: patch the version in the copy.
ver=$("$BIN" --version | awk '{print $2}')
if [ ${#ver} -ge 3 ] && grep -qaF "$ver" "$tmp/other/rlmcp_http.so"; then
    other=$(printf '%s' "$ver" | tr '0-9' '9876543210')
    LC_ALL=C sed -i "s/\x00$ver\x00/\x00$other\x00/" "$tmp/other/rlmcp_http.so"
    RLMCP_MODULE_DIR=$tmp/other timeout 60 "$BIN" --config "$tmp/http.yaml" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 1 ] && pass "module of another build: exit 1" || fail "module of another build: exit $rc"
    has "$tmp/err" "belongs to another build (version $other"
else
    fail "version $ver not found in rlmcp_http.so"
fi

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all module checks passed"
