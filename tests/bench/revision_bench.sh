#!/usr/bin/env bash
# revision_bench.sh - MCP 2026-07-28 (stateless) beside 2025-11-25
# (sessions) over HTTP on one runloop-mcp, and 2026-07-28 through haproxy
# with two replicas beside one process, all in the same run:
#   1. p50/p99 of tools/list and tools/call (test_simple_text), one request
#      at a time on a keep-alive connection (revision_bench.mjs)
#   2. requests/s with wrk for the same four requests
#   3. 2026-07-28 tools/list and tools/call requests/s: one process direct,
#      haproxy -> one replica, haproxy -> two replicas
# No assertions on time: this prints figures and ratios.
# Environment: RLMCP_BUILD_DIR (default build/), WRK_SECONDS (10),
# WRK_CONNECTIONS (32), LATENCY_N (2000).
set -euo pipefail

SRC="${RLMCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
BUILD="${RLMCP_BUILD_DIR:-$SRC/build}"
BIN="$BUILD/bin/runloop-mcp"
HERE="$SRC/tests/bench"
WRK_SECONDS="${WRK_SECONDS:-10}"
WRK_CONNECTIONS="${WRK_CONNECTIONS:-32}"
LATENCY_N="${LATENCY_N:-2000}"
[ -x "$BIN" ] || { echo "revision_bench.sh: $BIN missing" >&2; exit 2; }
for t in wrk haproxy; do
    command -v "$t" >/dev/null || { echo "revision_bench.sh: $t not installed (scripts/bootstrap)" >&2; exit 2; }
done

work="$(mktemp -d /tmp/rlmcp-revbench.XXXXXX)"
pids=()
cleanup() {
    status=$?
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT INT TERM

cat >"$work/bench.yaml" <<YAML
server:
  name: runloop-mcp-bench
  http:
    listen: 127.0.0.1:0
    max_sessions: 4000
    max_connections: 4096
    state_secret: "revision-bench-secret-0123456789abcdef"
runloop:
  backend: cloud
  base_url: http://127.0.0.1:9
plugins:
  - name: conformance
YAML

port=""
start_host() { # name -> sets port
    RLMCP_PLUGIN_DIR="$BUILD/plugins" RUNLOOP_API_KEY= RUNLOOP_BASE_URL= \
        "$BIN" -c "$work/bench.yaml" --transport http --log-level notice \
        </dev/null >/dev/null 2>"$work/$1.log" &
    pids+=($!)
    port=""
    for _ in $(seq 1 600); do
        port="$(grep -oE '\(port [0-9]+\)' "$work/$1.log" 2>/dev/null | grep -oE '[0-9]+' || true)"
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    echo "revision_bench.sh: runloop-mcp did not start" >&2; cat "$work/$1.log" >&2; return 1
}
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
start_lb() { # name port servers...
    local name="$1" port="$2"; shift 2
    {
        printf 'global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n'
        printf 'frontend mcp\n  bind 127.0.0.1:%s\n  default_backend replicas\n' "$port"
        printf 'backend replicas\n  balance roundrobin\n  http-request set-header Host localhost\n'
        local i=0
        for s in "$@"; do i=$((i + 1)); printf '  server r%d 127.0.0.1:%s\n' "$i" "$s"; done
    } >"$work/$name.cfg"
    haproxy -db -f "$work/$name.cfg" </dev/null >/dev/null 2>"$work/$name.log" &
    pids+=($!)
    for _ in $(seq 1 300); do
        node -e "require('net').connect($port,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" && return 0
        sleep 0.1
    done
    echo "revision_bench.sh: haproxy did not start" >&2; cat "$work/$name.log" >&2; return 1
}

declare -A R
lat() { # key port rev method
    local out
    out="$(node "$HERE/revision_bench.mjs" latency "http://127.0.0.1:$2/mcp" "$LATENCY_N" "$3" "$4")"
    R[$1.p50]="$(echo "$out" | node -pe 'JSON.parse(require("fs").readFileSync(0)).p50_ms')"
    R[$1.p99]="$(echo "$out" | node -pe 'JSON.parse(require("fs").readFileSync(0)).p99_ms')"
}
rps() { # key port rev method
    local sid="" out
    [ "$3" = 2026-07-28 ] || sid="$(node "$HERE/revision_bench.mjs" session "http://127.0.0.1:$2/mcp")"
    out="$(WRK_BODY="$(node "$HERE/revision_bench.mjs" body "$3" "$4")" \
        WRK_HEADERS="$(node "$HERE/revision_bench.mjs" headers "$3" "$4" "$sid")" \
        wrk -t2 -c"$WRK_CONNECTIONS" -d"${WRK_SECONDS}s" -s "$HERE/revision_request.lua" "http://127.0.0.1:$2" 2>&1)"
    echo "$out" | sed "s|^|  [$1 wrk] |" >&2
    R[$1.rps]="$(echo "$out" | awk '/^Requests\/sec:/{printf "%d", $2}')"
    R[$1.non2xx]="$(echo "$out" | sed -nE 's/.*non2xx=([0-9]+).*/\1/p')"
}

start_host one
p1=$port
for rev in 2025-11-25 2026-07-28; do
    for m in tools/list tools/call; do
        lat "$rev.$m" "$p1" "$rev" "$m"
        rps "$rev.$m" "$p1" "$rev" "$m"
    done
done
start_host two
p2=$port
lb1="$(free_port)"; start_lb lb1 "$lb1" "$p1"
lb2="$(free_port)"; start_lb lb2 "$lb2" "$p1" "$p2"
for m in tools/list tools/call; do
    rps "lb1.$m" "$lb1" 2026-07-28 "$m"
    rps "lb2.$m" "$lb2" 2026-07-28 "$m"
    lat "lb2.$m" "$lb2" 2026-07-28 "$m"
done

ratio() { node -e "const a=$1,b=$2;console.log(b>0?(a/b).toFixed(2):'n/a')"; }
printf '\n%-46s %12s %12s %8s\n' "figure (same run, $(nproc) cores)" "2026-07-28" "2025-11-25" "ratio"
for m in tools/list tools/call; do
    printf '%-46s %12s %12s %8s\n' "$m p50, keep-alive client (ms)" "${R[2026-07-28.$m.p50]}" "${R[2025-11-25.$m.p50]}" "$(ratio "${R[2026-07-28.$m.p50]}" "${R[2025-11-25.$m.p50]}")"
    printf '%-46s %12s %12s %8s\n' "$m p99 (ms)" "${R[2026-07-28.$m.p99]}" "${R[2025-11-25.$m.p99]}" "$(ratio "${R[2026-07-28.$m.p99]}" "${R[2025-11-25.$m.p99]}")"
    printf '%-46s %12s %12s %8s\n' "$m wrk -c$WRK_CONNECTIONS (req/s)" "${R[2026-07-28.$m.rps]}" "${R[2025-11-25.$m.rps]}" "$(ratio "${R[2026-07-28.$m.rps]}" "${R[2025-11-25.$m.rps]}")"
done
printf '\n%-46s %12s %12s %12s\n' "2026-07-28 (req/s, wrk -c$WRK_CONNECTIONS)" "one process" "lb -> one" "lb -> two"
for m in tools/list tools/call; do
    printf '%-46s %12s %12s %12s\n' "$m" "${R[2026-07-28.$m.rps]}" "${R[lb1.$m.rps]}" "${R[lb2.$m.rps]}"
    printf '%-46s %12s %12s %12s\n' "  p50 through haproxy -> two (ms)" "${R[2026-07-28.$m.p50]}" "" "${R[lb2.$m.p50]}"
done
echo "non-2xx during wrk: $(for k in "${!R[@]}"; do case $k in *.non2xx) printf '%s=%s ' "${k%.non2xx}" "${R[$k]}";; esac; done)"
