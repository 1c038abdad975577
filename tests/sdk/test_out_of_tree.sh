#!/usr/bin/env bash
# test_out_of_tree.sh BUILD_DIR SOURCE_DIR - install runloop-mcp into a
# temporary prefix, build sdk/examples/hello outside the source tree twice
# (CMake find_package(rlmcp-plugin), and make + pkg-config), check each
# plugin exports only its descriptor, and load each with the installed
# runloop-mcp --list-tools.
set -uo pipefail

BUILD=$(realpath "$1")
SRC=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

if cmake --install "$BUILD" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    pass "cmake --install into a temporary prefix"
else
    fail "cmake --install"; tail -20 "$tmp/install.log"; exit 1
fi
check "binary installed" '[ -x "$prefix/bin/runloop-mcp" ]'
check "header installed" '[ -f "$prefix/include/rlmcp/plugin.h" ]'
check "header is the SDK header" 'cmp -s "$prefix/include/rlmcp/plugin.h" "$SRC/sdk/include/rlmcp/plugin.h"'
pc=$(find "$prefix" -name rlmcp-plugin.pc | head -1)
cfg=$(find "$prefix" -name rlmcp-pluginConfig.cmake | head -1)
check "pkg-config file installed" '[ -n "$pc" ]'
check "CMake package installed" '[ -n "$cfg" ]'
plugdir=$(find "$prefix" -type d -path '*runloop-mcp/plugins' | head -1)
check "in-tree hello plugin installed" '[ -f "$plugdir/rlmcp_hello.so" ]'

# The example, copied out of the source tree as an author would.
cp -r "$SRC/sdk/examples/hello" "$tmp/hello-cmake"
cp -r "$SRC/sdk/examples/hello" "$tmp/hello-make"

if cmake -S "$tmp/hello-cmake" -B "$tmp/hello-cmake/build" -DCMAKE_PREFIX_PATH="$prefix" \
        >"$tmp/cmake.log" 2>&1 &&
   cmake --build "$tmp/hello-cmake/build" >>"$tmp/cmake.log" 2>&1; then
    pass "hello builds with find_package(rlmcp-plugin)"
else
    fail "hello with CMake"; tail -30 "$tmp/cmake.log"
fi
so_cmake=$tmp/hello-cmake/build/rlmcp_hello.so
check "CMake build produced rlmcp_hello.so" '[ -f "$so_cmake" ]'
check "CMake build used -fvisibility=hidden and -z defs" \
    'grep -rq -- "-fvisibility=hidden" "$tmp/hello-cmake/build" && grep -rq -- "-z,defs" "$tmp/hello-cmake/build"'

if PKG_CONFIG_PATH=$(dirname "$pc") make -C "$tmp/hello-make" >"$tmp/make.log" 2>&1; then
    pass "hello builds with make + pkg-config"
else
    fail "hello with make"; tail -30 "$tmp/make.log"
fi
so_make=$tmp/hello-make/rlmcp_hello.so
check "make build produced rlmcp_hello.so" '[ -f "$so_make" ]'
check "pkg-config gives the installed include dir" \
    '[ "$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=includedir rlmcp-plugin | xargs realpath)" = "$(realpath "$prefix/include")" ]'
check "pkg-config version is the ABI version" \
    '[ "$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --modversion rlmcp-plugin)" = "$(sed -n "s/^#define RLMCP_ABI_MAJOR \([0-9]*\)/\1/p" "$SRC/sdk/include/rlmcp/plugin.h").$(sed -n "s/^#define RLMCP_ABI_MINOR \([0-9]*\)/\1/p" "$SRC/sdk/include/rlmcp/plugin.h")" ]'

for so in "$so_cmake" "$so_make"; do
    exports=$(nm -D --defined-only "$so" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort | tr '\n' ' ')
    check "$(basename "$(dirname "$so")"): exports only the descriptor ($exports)" \
        '[ "$exports" = "rlmcp_plugin_descriptor " ]'
    cat >"$tmp/d.yaml" <<YAML
plugins:
  - name: hello
    path: $so
    config: {greeting: Howdy}
YAML
    if "$prefix/bin/runloop-mcp" --config "$tmp/d.yaml" --list-tools >"$tmp/out" 2>"$tmp/err"; then
        pass "installed runloop-mcp loads $(basename "$(dirname "$so")")/rlmcp_hello.so"
    else
        fail "runloop-mcp --list-tools with $so"; cat "$tmp/err"
    fi
    check "hello is listed, read-only" 'grep -Eq "^hello +hello +read-only" "$tmp/out"'
done

# The installed binary finds its own plugins with no plugin_dir.
printf 'plugins: [hello]\n' >"$tmp/own.yaml"
if "$prefix/bin/runloop-mcp" --config "$tmp/own.yaml" --check-config >"$tmp/out" 2>"$tmp/err"; then
    pass "installed runloop-mcp finds the installed hello plugin"
else
    fail "installed plugin dir"; cat "$tmp/err"
fi
check "plugin loaded from the prefix" 'grep -q "$prefix/bin/../lib" "$tmp/out"'

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all SDK checks passed"
