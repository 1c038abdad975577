#!/usr/bin/env bash
# test_check_format.sh SOURCE_DIR - scripts/check-format on a copy of the
# script and .clang-format with a few C files of its own: a file that
# differs is named and fails the check, a formatted one passes, the frozen
# ABI 1.0 header copy is left out, and a missing clang-format says how to
# install it.
set -uo pipefail

SRC=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

T=$tmp/tree
mkdir -p "$T/scripts" "$T/host" "$T/plugins/p" "$T/tests/fixtures/abi-1.0/include/rlmcp"
cp "$SRC/scripts/check-format" "$T/scripts/"
cp "$SRC/.clang-format" "$T/"
cat >"$T/host/good.c" <<'C'
int good(int a)
{
    if (a > 1)
        return a;
    return 0;
}
C
printf 'int bad(int a){return a;}\n' >"$T/plugins/p/bad.c"
printf 'int   frozen ;\n' >"$T/tests/fixtures/abi-1.0/include/rlmcp/plugin.h"

"$T/scripts/check-format" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && pass "a file that differs fails the check" ||
    fail "exit $rc with a misformatted file: $(cat "$tmp/err")"
grep -q '^  plugins/p/bad.c$' "$tmp/err" && pass "the file that differs is named" ||
    fail "bad.c not named: $(cat "$tmp/err")"
grep -q '1 of 2 files differ' "$tmp/err" && pass "the count leaves the ABI 1.0 copy out" ||
    fail "count: $(head -1 "$tmp/err")"
if grep -q 'good.c\|abi-1.0' "$tmp/err"; then
    fail "a formatted or excluded file was named: $(cat "$tmp/err")"
else
    pass "formatted and excluded files are not named"
fi
grep -q 'clang-format -i FILE' "$tmp/err" && pass "the message says how to fix it" ||
    fail "no remedy: $(cat "$tmp/err")"

"$T/scripts/check-format" "$T/host/good.c" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && grep -q '1 files match' "$tmp/out" &&
    pass "a formatted file given by name passes" ||
    fail "good.c alone: exit $rc $(cat "$tmp/out" "$tmp/err")"

CLANG_FORMAT=rlmcp-no-such-clang-format "$T/scripts/check-format" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q 'scripts/bootstrap' "$tmp/err" &&
    pass "a missing clang-format is named with how to install it" ||
    fail "missing clang-format: exit $rc $(cat "$tmp/err")"

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all check-format checks passed"
