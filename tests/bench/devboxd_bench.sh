#!/usr/bin/env bash
# Runs the devboxd benchmark against build/ (or $RLMCP_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/../.."
export RLMCP_BUILD_DIR=${RLMCP_BUILD_DIR:-$PWD/build}
exec node tests/bench/devboxd_bench.mjs "$@"
