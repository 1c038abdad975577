#!/usr/bin/env bash
# rlclient_bench.sh [BUILD_DIR] [N]: client overhead of rlclient_request
# against a real devboxd on a unix socket, beside a hand-written HTTP/1.1
# client on the same socket (see rlclient_bench.c). Starts its own devboxd
# on a temporary state dir and removes both on exit.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
n=${2:-2000}
devboxd=$build/bin/devboxd
[ -x "$devboxd" ] || { echo "rlclient_bench: $devboxd not built" >&2; exit 1; }

tmp=$(mktemp -d /tmp/rlbench-XXXXXX)
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -I"$src/host/backend" -I"$src/host/base" -I"$src/sdk/include" -DRLMCP_VERSION='"bench"' \
    "$src/tests/bench/rlclient_bench.c" "$src/host/backend/rlclient.c" "$src/host/backend/sse.c" \
    "$src/host/base/log.c" -o "$tmp/rlclient_bench" -lcurl -lpthread -lm

mkdir -p "$tmp/state"
"$devboxd" --state-dir "$tmp/state" --listen "unix:$tmp/state/devboxd.sock" \
    2>"$tmp/devboxd.log" &
pid=$!
for _ in $(seq 600); do
    if curl -sf --unix-socket "$tmp/state/devboxd.sock" \
        http://localhost/v1/devboxes?limit=1 >/dev/null 2>&1; then break; fi
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/devboxd.log" >&2; exit 1; }
    sleep 0.05
done
"$tmp/rlclient_bench" "$tmp/state/devboxd.sock" "$n"
