#!/usr/bin/env bash
# schema_bench.sh: the host's schema validation (patterns run by PCRE2)
# beside ajv on the same pattern-constrained arguments; see
# schema_bench.mjs. Builds its own binary from host/tools/schema*.c.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rlmcp-schema-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -I"$src/host/tools" -I"$src/host/base" \
    "$src/tests/bench/schema_bench.c" "$src/host/tools/schema.c" \
    "$src/host/tools/schema_pattern.c" "$src/host/base/suggest.c" \
    -o "$tmp/schema_bench" \
    $(pkg-config --cflags --libs libcjson libpcre2-8) -lpthread -lm
node "$src/tests/bench/schema_bench.mjs" "$tmp/schema_bench"
