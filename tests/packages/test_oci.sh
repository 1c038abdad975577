#!/usr/bin/env bash
# test_oci.sh BUILD_DIR SOURCE_DIR - the OCI image of the HTTP server
# (packaging/oci/Containerfile), built and run with buildah and runc:
# a Debian 12 base made by mmdebstrap with the package's dependencies, the
# runloop-mcp .deb from this build installed by the recipe; in the image
# runloop-mcp --version and --check-config run as nobody, the server refuses
# 0.0.0.0 without a token, and with one it serves /health and MCP
# (initialize, tools/list) to a client on the host.
set -uo pipefail

BUILD=$(realpath "$1")
SRC=$(realpath "$2")
tmp=$(mktemp -d /tmp/rlmcp-oci-XXXXXX)
BA=(buildah --root "$tmp/storage" --runroot "$tmp/run")
RUNTIME=(--runtime /usr/sbin/runc) # crun cannot run on hybrid cgroups here
TOKEN=oci-token-0123456789abcdef0123456789
server_pid=
port=
# buildah run does not pass a kill on to the container: the server inside is
# stopped by its command line (the free port makes it unique on the host),
# then buildah run ends with it (bounded: killed if it has not).
stop_server() {
    local pids=''
    if [ -n "$port" ]; then
        pids=$(pgrep -f -- "^/usr/bin/runloop-mcp --config /etc/runloop-mcp/runloop-mcp.yaml --listen 127.0.0.1:$port\$")
        if [ -n "$pids" ]; then kill $pids 2>/dev/null; fi
    fi
    if [ -n "$server_pid" ]; then
        for _ in $(seq 1 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    fi
    server_pid=
}
cleanup() {
    stop_server
    "${BA[@]}" rm --all >/dev/null 2>&1
    "${BA[@]}" rmi --all --force >/dev/null 2>&1
    umount -R "$tmp/storage" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
has() {
    if grep -qE -- "$2" "$1"; then pass "$(basename "$1") has /$2/"; else
        fail "$(basename "$1") lacks /$2/"; sed 's/^/    : /' "$1" | head -30; fi
}
for t in buildah mmdebstrap /usr/sbin/runc; do
    if ! command -v "$t" >/dev/null; then
        echo "FAIL - $t is missing: scripts/bootstrap installs it"; exit 1
    fi
done

# The package, and its dependencies by name.
cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$tmp/pkg" -D CPACK_COMPONENTS_ALL=server \
    >"$tmp/cpack.log" 2>&1 || { fail "cpack"; tail -20 "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/pkg/runloop-mcp_*.deb | head -1)
mkdir -p "$tmp/ctx" && cp "$deb" "$tmp/ctx/"
deps=$(dpkg-deb -f "$deb" Depends | tr ',|' '\n\n' | sed 's/^ *//; s/[ (].*//' | grep -v '^$' | sort -u | paste -sd, -)
pass "package $(basename "$deb") (depends: $deps)"

# A Debian 12 base with those dependencies (no registry needed).
if mmdebstrap --quiet --variant=essential --include="$deps" bookworm "$tmp/rootfs.tar" >"$tmp/mm.log" 2>&1; then
    pass "mmdebstrap base"; else fail "mmdebstrap"; tail -20 "$tmp/mm.log"; exit 1; fi
ctr=$("${BA[@]}" from scratch) &&
    "${BA[@]}" add "$ctr" "$tmp/rootfs.tar" / >/dev/null &&
    "${BA[@]}" commit --quiet "$ctr" localhost/runloop-mcp-base:bookworm >/dev/null &&
    "${BA[@]}" rm "$ctr" >/dev/null || { fail "base image"; exit 1; }
pass "base image localhost/runloop-mcp-base:bookworm"

# The recipe.
if "${BA[@]}" bud --quiet --isolation oci "${RUNTIME[@]}" -f "$SRC/packaging/oci/Containerfile" \
    -t localhost/runloop-mcp:test "$tmp/ctx" >"$tmp/bud.log" 2>&1; then
    pass "buildah bud packaging/oci/Containerfile"; else fail "buildah bud"; tail -30 "$tmp/bud.log"; exit 1; fi
"${BA[@]}" inspect --type image localhost/runloop-mcp:test >"$tmp/inspect.json"
has "$tmp/inspect.json" '"User": "65534:65534"'
has "$tmp/inspect.json" '"/usr/bin/runloop-mcp"'

c=$("${BA[@]}" from localhost/runloop-mcp:test)
brun() { "${BA[@]}" run "${RUNTIME[@]}" --network host "$@"; }
brun "$c" -- /usr/bin/runloop-mcp --version >"$tmp/out" 2>&1
has "$tmp/out" "^runloop-mcp [0-9]+\.[0-9]+\.[0-9]+ \(plugin ABI"
brun "$c" -- id -u >"$tmp/out" 2>&1
has "$tmp/out" "^65534$"
brun "$c" -- /usr/bin/runloop-mcp --check-config --config /etc/runloop-mcp/runloop-mcp.yaml >"$tmp/out" 2>&1
has "$tmp/out" "transport http on 0\.0\.0\.0:8000"
has "$tmp/out" "^ok$"
# Beyond loopback without a token: refused.
brun "$c" -- /usr/bin/runloop-mcp --config /etc/runloop-mcp/runloop-mcp.yaml >"$tmp/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && pass "no token: refused (exit $rc)" || fail "served without a token"
has "$tmp/out" "refusing to listen on 0\.0\.0\.0:8000 without an access token"

# With a token: serves a client on the host (a free loopback port).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# buildah run itself in the background (not brun, whose $! would be a subshell).
"${BA[@]}" run "${RUNTIME[@]}" --network host --env RLMCP_HTTP_TOKEN=$TOKEN "$c" -- \
    /usr/bin/runloop-mcp --config /etc/runloop-mcp/runloop-mcp.yaml --listen 127.0.0.1:$port \
    >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
    curl -fsS "http://127.0.0.1:$port/health" >"$tmp/out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
has "$tmp/out" '"status":"ok"'
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H "Authorization: Bearer $TOKEN")
curl -sS -D "$tmp/hdr" "http://127.0.0.1:$port/mcp" "${H[@]}" \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"oci-test","version":"1"}}}' >"$tmp/out"
has "$tmp/out" '"serverInfo":\{"name":"runloop-mcp"'
sid=$(awk 'tolower($1) == "mcp-session-id:" {print $2}' "$tmp/hdr" | tr -d '\r')
curl -sS "http://127.0.0.1:$port/mcp" "${H[@]}" -H "Mcp-Session-Id: $sid" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
curl -sS "http://127.0.0.1:$port/mcp" "${H[@]}" -H "Mcp-Session-Id: $sid" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' >"$tmp/out"
has "$tmp/out" '"name":"create_devbox"'
curl -sS -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/metrics" >"$tmp/out"
has "$tmp/out" "^401$"
stop_server

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
