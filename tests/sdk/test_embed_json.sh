#!/usr/bin/env bash
# test_embed_json.sh TOOL - rlmcp-embed-json, the build step behind
# schemas/*.json: a good schema becomes a compact NUL-terminated array; each
# kind of bad file fails with a message naming the file and the fault, and
# leaves no output behind.
set -uo pipefail

TOOL=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# refused NAME CONTENT EXPECTED: the file is refused with EXPECTED in stderr.
refused() {
    local f=$tmp/$1
    printf '%s' "$2" >"$f"
    rm -f "$tmp/out.c" "$tmp/out.h"
    if "$TOOL" "$tmp/out.c" "$tmp/out.h" "$f" 2>"$tmp/err"; then
        fail "$1: accepted"
    elif ! grep -qF -- "$3" "$tmp/err"; then
        fail "$1: message '$(cat "$tmp/err")' lacks '$3'"
    elif [ -e "$tmp/out.c" ] || [ -e "$tmp/out.h" ]; then
        fail "$1: output left behind"
    else
        pass "$1 refused: $(head -1 "$tmp/err" | sed "s|$tmp/||")"
    fi
}

refused trailing_comma.json $'{\n  "type": "object",\n  "properties": {},\n}\n' \
    "trailing_comma.json:4:"
refused garbage_after.json '{"type":"object"} x' "garbage_after.json:1:19: not valid JSON"
refused array.json '[1]' "a tool schema must be a JSON object"
refused twice.json '{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}' \
    'key "type" appears twice'
refused not_object_type.json '{"type":"string"}' '"type": "object"'
refused bad_type.json '{"type":"object","properties":{"a":{"type":"strin"}}}' \
    "unknown type 'strin'"
refused bad_pattern.json '{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}' \
    "pattern"
refused bad.name.json$'\x01' '{"type":"object"}' "name the file"
refused out_not_object.out.json '{"type":"array"}' '"type": "object"'

printf '{\n  "type": "object",\n  "properties": {"é": {"type": "string"}}\n}\n' \
    >"$tmp/my-tool.out.json"
if "$TOOL" "$tmp/out.c" "$tmp/out.h" "$tmp/my-tool.out.json" 2>"$tmp/err"; then
    pass "a good schema is accepted"
else
    fail "a good schema is refused: $(cat "$tmp/err")"
fi
if grep -q "^extern const char schema_my_tool_out\[\];" "$tmp/out.h" 2>/dev/null; then
    pass "declared as schema_my_tool_out"
else
    fail "no declaration of schema_my_tool_out in the header"
fi
cat >"$tmp/main.c" <<'C'
#include <stdio.h>
#include "out.h"
int main(void) { fputs(schema_my_tool_out, stdout); return 0; }
C
if cc -o "$tmp/main" -I"$tmp" "$tmp/main.c" "$tmp/out.c" 2>"$tmp/cc.err" &&
    [ "$("$tmp/main")" = '{"type":"object","properties":{"é":{"type":"string"}}}' ]; then
    pass "embedded compacted and NUL-terminated, UTF-8 kept"
else
    fail "embedded text wrong: $(cat "$tmp/cc.err"; "$tmp/main" 2>&1)"
fi

[ "$failures" -eq 0 ] && echo "all passed" || echo "$failures failed"
exit $((failures > 0))
