#!/usr/bin/env bash
# http_bench.sh - the HTTP transport's figures beside the reference
# TypeScript server (@modelcontextprotocol/server-everything streamableHttp,
# forced onto 127.0.0.1), measured in the same run:
#   1. tools/list p50 from a keep-alive raw HTTP client (http_bench.mjs)
#   2. sustained tools/list throughput with wrk (http_tools_list.lua)
#   3. 1,000 concurrent sessions held: server RSS before (fresh process)
#      and after
# Targets for runloop-mcp: p50 <= 0.2 ms, >= 20,000 req/s on 2 cores.
# No assertions on time: this prints figures and ratios.
# Environment: RLMCP_BUILD_DIR (default build/), WRK_SECONDS (10),
# WRK_CONNECTIONS (32), LATENCY_N (2000), SESSIONS_N (1000).
set -euo pipefail

SRC="${RLMCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
BUILD="${RLMCP_BUILD_DIR:-$SRC/build}"
BIN="$BUILD/bin/runloop-mcp"
HERE="$SRC/tests/bench"
REF="$SRC/tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
WRK_SECONDS="${WRK_SECONDS:-10}"
WRK_CONNECTIONS="${WRK_CONNECTIONS:-32}"
LATENCY_N="${LATENCY_N:-2000}"
SESSIONS_N="${SESSIONS_N:-1000}"
for need in "$BIN" "$REF"; do [ -e "$need" ] || { echo "http_bench.sh: $need missing" >&2; exit 2; }; done
command -v wrk >/dev/null || { echo "http_bench.sh: wrk not installed (scripts/bootstrap)" >&2; exit 2; }

work="$(mktemp -d /tmp/rlmcp-bench.XXXXXX)"
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

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
wait_http() { # port
    for _ in $(seq 1 600); do
        curl -s -o /dev/null "http://127.0.0.1:$1/" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { echo "http_bench.sh: server exited" >&2; return 1; }
        sleep 0.1
    done
    echo "http_bench.sh: server did not start" >&2; return 1
}

# Our server: the conformance fixtures (14 tools), no Runloop backend needed.
cat >"$work/bench.yaml" <<YAML
server:
  name: runloop-mcp-bench
  http:
    listen: 127.0.0.1:0
    max_sessions: 4000
    max_connections: 4096
runloop:
  backend: cloud
  base_url: http://127.0.0.1:9
plugins:
  - name: conformance
YAML

declare -A R
measure() { # name port
    local name="$1" port="$2" url="http://127.0.0.1:$2/mcp" sid out
    # Sessions first, on the fresh process: RSS before is the idle server.
    out="$(node "$HERE/http_bench.mjs" sessions "$url" "$SESSIONS_N" "$pid")"
    R[$name.alive]="$(echo "$out" | node -pe 'JSON.parse(require("fs").readFileSync(0)).alive')"
    R[$name.rss0]="$(echo "$out" | node -pe '(JSON.parse(require("fs").readFileSync(0)).rss_before_kib/1024).toFixed(1)')"
    R[$name.rss1]="$(echo "$out" | node -pe '(JSON.parse(require("fs").readFileSync(0)).rss_after_kib/1024).toFixed(1)')"
    out="$(node "$HERE/http_bench.mjs" latency "$url" "$LATENCY_N")"
    R[$name.p50]="$(echo "$out" | node -pe 'JSON.parse(require("fs").readFileSync(0)).p50_ms')"
    R[$name.p99]="$(echo "$out" | node -pe 'JSON.parse(require("fs").readFileSync(0)).p99_ms')"
    R[$name.bytes]="$(echo "$out" | node -pe 'JSON.parse(require("fs").readFileSync(0)).bytes')"
    sid="$(node "$HERE/http_bench.mjs" session "$url")"
    out="$(MCP_SESSION_ID="$sid" wrk -t2 -c"$WRK_CONNECTIONS" -d"${WRK_SECONDS}s" \
        -s "$HERE/http_tools_list.lua" "http://127.0.0.1:$port" 2>&1)"
    echo "$out" | sed "s/^/  [$name wrk] /" >&2
    R[$name.rps]="$(echo "$out" | awk '/^Requests\/sec:/{printf "%d", $2}')"
    R[$name.non2xx]="$(echo "$out" | sed -nE 's/.*non2xx=([0-9]+).*/\1/p')"
}

RLMCP_PLUGIN_DIR="$BUILD/plugins" RUNLOOP_API_KEY= RUNLOOP_BASE_URL= \
    "$BIN" -c "$work/bench.yaml" --transport http --log-level notice 2>"$work/ours.log" &
pid=$!
port=""
for _ in $(seq 1 600); do
    port="$(grep -oE '\(port [0-9]+\)' "$work/ours.log" 2>/dev/null | grep -oE '[0-9]+' || true)"
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "http_bench.sh: runloop-mcp did not start" >&2; cat "$work/ours.log" >&2; exit 1; }
measure ours "$port"
stop

port="$(free_port)"
PORT="$port" node --import "$HERE/http_bind_localhost.mjs" "$REF" streamableHttp >/dev/null 2>"$work/ref.log" &
pid=$!
wait_http "$port"
measure ref "$port"
stop

ratio() { node -e "const a=$1,b=$2;console.log(b>0?(a/b).toFixed(2):'n/a')"; }
printf '\n%-44s %14s %14s %10s\n' "figure (same run, $(nproc) cores)" "runloop-mcp" "reference TS" "ratio"
printf '%-44s %14s %14s %10s\n' "tools/list p50, keep-alive client (ms)" "${R[ours.p50]}" "${R[ref.p50]}" "$(ratio "${R[ref.p50]}" "${R[ours.p50]}")x faster"
printf '%-44s %14s %14s %10s\n' "tools/list p99 (ms)" "${R[ours.p99]}" "${R[ref.p99]}" "$(ratio "${R[ref.p99]}" "${R[ours.p99]}")x"
printf '%-44s %14s %14s %10s\n' "tools/list reply size (bytes)" "${R[ours.bytes]}" "${R[ref.bytes]}" ""
printf '%-44s %14s %14s %10s\n' "tools/list throughput, wrk -c$WRK_CONNECTIONS (req/s)" "${R[ours.rps]}" "${R[ref.rps]}" "$(ratio "${R[ours.rps]}" "${R[ref.rps]}")x"
printf '%-44s %14s %14s %10s\n' "  non-2xx answers during wrk" "${R[ours.non2xx]:-?}" "${R[ref.non2xx]:-?}" ""
printf '%-44s %14s %14s %10s\n' "$SESSIONS_N sessions held: still answering" "${R[ours.alive]}" "${R[ref.alive]}" ""
printf '%-44s %14s %14s %10s\n' "  server RSS before (MiB)" "${R[ours.rss0]}" "${R[ref.rss0]}" ""
printf '%-44s %14s %14s %10s\n' "  server RSS after (MiB)" "${R[ours.rss1]}" "${R[ref.rss1]}" "$(ratio "${R[ref.rss1]}" "${R[ours.rss1]}")x less"
echo "targets for runloop-mcp: p50 <= 0.2 ms, >= 20000 req/s"
