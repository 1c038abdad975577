#!/usr/bin/env bash
# test_out_of_tree.sh BUILD_DIR SOURCE_DIR - install runloop-mcp into a
# temporary prefix, build sdk/examples/hello outside the source tree twice
# (CMake find_package(rlmcp-plugin COMPONENTS helpers), and make +
# pkg-config rlmcp-helpers), both linking the installed helper library;
# check each plugin exports only its descriptor, load each with the
# installed runloop-mcp --list-tools and call its tool over stdio.
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

# The helper library, as an author links it: pkg-config or rlmcp::helpers.
hpc=$(dirname "$pc")/rlmcp-helpers.pc
hlib=$(find "$prefix" -name librlmcp_helpers.a | head -1)
pcq() { PKG_CONFIG_PATH=$(dirname "$hpc") pkg-config "$@"; }
check "helper library installed" '[ -n "$hlib" ]'
check "helper header installed" '[ -f "$prefix/include/rlmcp/rlmcp_helpers.h" ]'
check "rlmcp-helpers.pc installed beside rlmcp-plugin.pc" '[ -f "$hpc" ]'
check "pkg-config rlmcp-helpers: the library, -z defs and cJSON" \
    'libs=$(pcq --libs rlmcp-helpers) && [[ "$libs" == *-lrlmcp_helpers* && "$libs" == *-z,defs* && "$libs" == *-lcjson* ]]'
check "pkg-config rlmcp-helpers: libdir is where the library is" \
    '[ "$(realpath "$(pcq --variable=libdir rlmcp-helpers)")" = "$(realpath "$(dirname "$hlib")")" ]'
check "CMake package offers the helpers component" 'grep -q "rlmcp::helpers" "$cfg"'
# Relocatable: a moved prefix is found from the .pc file's own place.
mv "$prefix" "$tmp/moved"
moved_pcdir=$tmp/moved/$(dirname "${hpc#"$prefix"/}")
moved_libdir=$tmp/moved/$(dirname "${hlib#"$prefix"/}")
check "rlmcp-helpers.pc follows a moved prefix" \
    '[ "$(realpath "$(PKG_CONFIG_PATH=$moved_pcdir pkg-config --variable=libdir rlmcp-helpers)")" = "$(realpath "$moved_libdir")" ]'
mv "$tmp/moved" "$prefix"
plugdir=$(find "$prefix" -type d -path '*runloop-mcp/plugins' | head -1)
check "in-tree hello plugin installed" '[ -f "$plugdir/rlmcp_hello.so" ]'
# Test fixtures stay out of a plain install: the e2e test plugin, the
# conformance suite's plugin and deployment, the loader and ABI fixtures.
for fx in testtools conformance abi10; do
    check "test fixture rlmcp_$fx.so not installed" \
        '[ -z "$(find "$prefix" -name "rlmcp_$fx.so")" ]'
done
check "no loader fixture (rlmcp_fx_*.so) installed" '[ -z "$(find "$prefix" -name "rlmcp_fx_*")" ]'
check "conformance deployment not installed" '[ -z "$(find "$prefix" -name conformance.yaml)" ]'
for so in "$plugdir"/*.so; do
    n=$(basename "$so" .so); n=${n#rlmcp_}
    check "installed plugin $n is a plugin of plugins/ or the SDK example" \
        '{ [ -d "$SRC/plugins/$n" ] && [ "$n" != conformance ]; } || [ "$n" = hello ]'
done
# The transports and libcurl are linked into the host: no modules directory.
check "no host modules installed" '[ -z "$(find "$prefix" -path "*runloop-mcp/modules*")" ]'

# The schema tool: checks a schema as the host will and embeds it.
check "rlmcp-embed-json installed" '[ -x "$prefix/bin/rlmcp-embed-json" ]'
mkdir -p "$tmp/schemas"
printf '{"type":"object","properties":{"greeting":{"type":"string"}}}\n' >"$tmp/schemas/config.json"
if "$prefix/bin/rlmcp-embed-json" "$tmp/s.c" "$tmp/s.h" "$tmp/schemas/config.json" >"$tmp/embed.log" 2>&1 &&
   cc -c -o "$tmp/s.o" -I"$tmp" "$tmp/s.c" >>"$tmp/embed.log" 2>&1; then
    pass "installed rlmcp-embed-json embeds a schema that compiles"
else
    fail "installed rlmcp-embed-json"; cat "$tmp/embed.log"
fi
check "embedded as schema_config" 'grep -q "schema_config" "$tmp/s.h"'
printf '{"type":"object","properties":{"x":{"type":"strnig"}}}\n' >"$tmp/schemas/bad.json"
"$prefix/bin/rlmcp-embed-json" "$tmp/b.c" "$tmp/b.h" "$tmp/schemas/bad.json" >"$tmp/embed.log" 2>&1
embed_rc=$?
check "installed rlmcp-embed-json refuses a bad schema, naming the file" \
    '[ "$embed_rc" -ne 0 ] && grep -q "bad.json" "$tmp/embed.log"'

# The example, copied out of the source tree as an author would.
cp -r "$SRC/sdk/examples/hello" "$tmp/hello-cmake"
cp -r "$SRC/sdk/examples/hello" "$tmp/hello-make"

# A sanitizer build installs an instrumented helper library: a plugin that
# links it must be built and linked with the same sanitizers.
san=""
if grep -q '^RLMCP_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
    san="-fsanitize=address,undefined"
elif grep -q '^RLMCP_TSAN:BOOL=ON' "$BUILD/CMakeCache.txt"; then
    san="-fsanitize=thread"
fi

if cmake -S "$tmp/hello-cmake" -B "$tmp/hello-cmake/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
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
check "CMake build linked the installed helper library" \
    '[ "$(grep -rhoE "[^ \"]*librlmcp_helpers\.a" "$tmp/hello-cmake/build/CMakeFiles" | head -1 | xargs realpath)" = "$(realpath "$hlib")" ]'

# The line the Makefile documents: PKG_CONFIG_PATH on make's command line,
# not in the environment.
if env -u PKG_CONFIG_PATH make -C "$tmp/hello-make" PKG_CONFIG_PATH="$(dirname "$pc")" \
        CFLAGS="-O2 -g -Wall -Wextra $san" >"$tmp/make.log" 2>&1; then
    pass "hello builds with make PKG_CONFIG_PATH=... (pkg-config rlmcp-helpers)"
else
    fail "hello with make"; tail -30 "$tmp/make.log"
fi
so_make=$tmp/hello-make/rlmcp_hello.so
check "make build produced rlmcp_hello.so" '[ -f "$so_make" ]'
check "make build linked -lrlmcp_helpers from the prefix" \
    'grep -q -- "-lrlmcp_helpers" "$tmp/make.log" && grep -qF -- "-L$(dirname "$pc")" "$tmp/make.log"'
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
    check "$(basename "$(dirname "$so")"): the helpers are linked in" \
        'nm "$so" | grep -E " rlmcp_h_arg_int$" >/dev/null'
    # The tool over stdio: arguments read and result set by the helpers.
    # A cloud backend that is never asked: nothing else is started.
    cat >"$tmp/call.yaml" <<YAML
runloop: {backend: cloud, base_url: "http://127.0.0.1:9", api_key: unused}
plugins:
  - name: hello
    path: $so
    config: {greeting: Howdy}
YAML
    printf '%s\n' \
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello","arguments":{"name":"Ada","steps":2}}}' \
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hello","arguments":{"name":"nobody"}}}' |
        HOME=$tmp timeout 60 "$prefix/bin/runloop-mcp" --config "$tmp/call.yaml" >"$tmp/out" 2>"$tmp/err"
    check "$(basename "$(dirname "$so")"): hello answers {greeting, steps}" \
        'grep -q "\"id\":2,\"result\":{.*\"structuredContent\":{\"greeting\":\"Howdy, Ada!\",\"steps\":2}" "$tmp/out"'
    check "$(basename "$(dirname "$so")"): hello refuses nobody (invalid_argument)" \
        'grep -q "\"id\":3,\"result\":{.*invalid_argument.*cannot greet nobody.*\"isError\":true" "$tmp/out"'
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
