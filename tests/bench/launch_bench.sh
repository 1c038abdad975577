#!/usr/bin/env bash
# launch_bench.sh: what scripts/run adds to a warm launch (nothing to
# install or build), beside the binary alone and beside the package check
# every launch used to run (scripts/bootstrap --check --run, one dpkg-query).
# Prints hyperfine's wall and CPU times; on a shared machine compare the
# user+system columns, which load does not inflate.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/run --version >/dev/null </dev/null # stamps and build up to date
uptime
hyperfine -N -i --warmup 5 -r "${RUNS:-50}" \
    'scripts/run --version' \
    'build/bin/runloop-mcp --version' \
    'scripts/bootstrap --check --run'
