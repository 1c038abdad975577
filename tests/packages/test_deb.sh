#!/usr/bin/env bash
# test_deb.sh BUILD_DIR SOURCE_DIR - the Debian packages: cpack makes
# runloop-mcp, devboxd and runloop-mcp-dev from this build; their control
# data (names, shared-library and tool dependencies) and contents are
# checked; they are unpacked into a throwaway root, and from there
# runloop-mcp --version, --check-config (finding its deployments and plugins
# relative to its own path) and one tool call over stdio on the packaged
# devboxd run; the -dev package builds the SDK example out of tree, which the
# packaged server then loads; the units pass systemd-analyze verify and the
# man pages groff's checks.
set -uo pipefail

BUILD=$(realpath "$1")
SRC=$(realpath "$2")
unset RLMCP_CONFIG RLMCP_PLUGIN_DIR RUNLOOP_API_KEY RUNLOOP_BASE_URL
tmp=$(mktemp -d /tmp/rlmcp-deb-XXXXXX)
root=$tmp/root
export RLMCP_STATE_DIR=$tmp/s
cleanup() {
    if [ -x "$root/usr/bin/runloop-mcp" ]; then
        "$root/usr/bin/runloop-mcp" engine stop >/dev/null 2>&1
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
has() {
    if grep -qE -- "$2" "$1"; then pass "$(basename "$1") has /$2/"; else
        fail "$(basename "$1") lacks /$2/"; sed 's/^/    : /' "$1" | head -40; fi
}
lacks() {
    if grep -qE -- "$2" "$1"; then fail "$(basename "$1") has /$2/"; grep -E -- "$2" "$1" | head -5; else
        pass "$(basename "$1") lacks /$2/"; fi
}

# --- build the packages ------------------------------------------------------
if ! cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1; then
    fail "cpack"; tail -30 "$tmp/cpack.log"; exit 1
fi
pass "cpack -G DEB"
deb() { ls "$tmp"/pkg/"$1"_*.deb 2>/dev/null | head -1; }
for p in runloop-mcp devboxd runloop-mcp-dev; do
    if [ -n "$(deb $p)" ]; then pass "package $p: $(basename "$(deb $p)")"; else fail "no package $p"; ls "$tmp/pkg"; exit 1; fi
    dpkg-deb -I "$(deb $p)" >"$tmp/$p.info"
    dpkg-deb -c "$(deb $p)" | awk '{print $6}' >"$tmp/$p.files"
done

# --- control data ---------------------------------------------------------------
has "$tmp/runloop-mcp.info" "^ Package: runloop-mcp$"
has "$tmp/runloop-mcp.info" "^ Depends: .*libcjson1"
has "$tmp/runloop-mcp.info" "^ Depends: .*libmicrohttpd12"
has "$tmp/runloop-mcp.info" "^ Depends: .*libpcre2-8-0"
has "$tmp/runloop-mcp.info" "^ Recommends: devboxd"
has "$tmp/devboxd.info" "^ Depends: .*mmdebstrap, slirp4netns, iproute2"
lacks "$tmp/devboxd.info" "bubblewrap"
has "$tmp/devboxd.info" "^ Depends: .*libnghttp2"
has "$tmp/runloop-mcp-dev.info" "^ Depends: .*libcjson-dev"
for f in postinst postrm; do
    dpkg-deb -e "$(deb runloop-mcp)" "$tmp/ctl"
    [ -x "$tmp/ctl/$f" ] && pass "runloop-mcp has $f" || fail "runloop-mcp lacks $f"
done
sh -n "$tmp/ctl/postinst" && pass "postinst parses" || fail "postinst syntax"

# --- contents ---------------------------------------------------------------------
F=$tmp/runloop-mcp.files
has "$F" "^\./usr/bin/runloop-mcp$"
has "$F" "^\./usr/lib/runloop-mcp/plugins/rlmcp_exec\.so$"
has "$F" "^\./usr/lib/runloop-mcp/plugins/rlmcp_lifecycle\.so$"
has "$F" "^\./usr/share/runloop-mcp/conf/runloop-mcp\.yaml$"
has "$F" "^\./usr/share/runloop-mcp/etc/runloop-mcp\.yaml$"
has "$F" "^\./usr/lib/systemd/system/runloop-mcp\.service$"
has "$F" "^\./usr/share/man/man1/runloop-mcp\.1"
has "$F" "^\./usr/share/man/man5/runloop-mcp\.yaml\.5"
has "$F" "^\./usr/share/doc/runloop-mcp/operations\.md$"
lacks "$F" "testtools|devboxd$|plugin\.h"
F=$tmp/devboxd.files
has "$F" "^\./usr/bin/devboxd$"
has "$F" "^\./usr/libexec/runloop-mcp/devboxd-agent$"
has "$F" "^\./usr/libexec/runloop-mcp/devboxd-ptyd$"
has "$F" "^\./usr/libexec/runloop-mcp/devboxd-build-runtime$"
has "$F" "^\./usr/lib/systemd/system/devboxd\.service$"
has "$F" "^\./usr/share/man/man8/devboxd\.8"
lacks "$F" "bin/runloop-mcp$"
F=$tmp/runloop-mcp-dev.files
has "$F" "^\./usr/include/rlmcp/plugin\.h$"
has "$F" "^\./usr/include/rlmcp/rlmcp_helpers\.h$"
has "$F" "^\./usr/lib/librlmcp_helpers\.a$"
has "$F" "^\./usr/lib/pkgconfig/rlmcp-plugin\.pc$"
has "$F" "^\./usr/lib/pkgconfig/rlmcp-helpers\.pc$"
has "$F" "^\./usr/lib/cmake/rlmcp-plugin/rlmcp-pluginConfig\.cmake$"

# --- into a throwaway root ------------------------------------------------------------
mkdir -p "$root"
for p in runloop-mcp devboxd runloop-mcp-dev; do dpkg-deb -x "$(deb $p)" "$root"; done
B=$root/usr/bin/runloop-mcp
"$B" --version >"$tmp/out" 2>&1
has "$tmp/out" "^runloop-mcp [0-9]+\.[0-9]+\.[0-9]+ \(plugin ABI 1\.[0-9]+\)$"
"$root/usr/bin/devboxd" --version >"$tmp/out" 2>&1
has "$tmp/out" "^devboxd [0-9]+\.[0-9]+\.[0-9]+$"
"$B" --check-config >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && pass "--check-config (exit 0)" || fail "--check-config: exit $rc"
has "$tmp/out" "^deployment: $root/usr/bin/\.\./share/runloop-mcp/conf/runloop-mcp\.yaml$"
has "$tmp/out" "^plugin dir: $root/usr/bin/\.\./lib/runloop-mcp/plugins"
has "$tmp/out" "local engine at unix:$RLMCP_STATE_DIR/devboxd\.sock"
has "$tmp/out" "^ok$"
"$B" --check-config -c "$root/usr/share/runloop-mcp/etc/runloop-mcp.yaml" >"$tmp/out" 2>&1
has "$tmp/out" "transport http on 127\.0\.0\.1:8000"
has "$tmp/out" "audit log: +/var/log/runloop-mcp/audit\.jsonl"

# One call, over stdio, on the packaged devboxd (started from $root/usr/bin).
{
    echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"deb-test","version":"1"}}}'
    echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    echo '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_devboxes","arguments":{}}}'
} >"$tmp/in"
# stdin stays open until the answer to id 1 arrives (bounded: 120 s).
(cat "$tmp/in"; for _ in $(seq 1 1200); do grep -q '"id":1' "$tmp/out" 2>/dev/null && break; sleep 0.1; done) |
    "$B" >"$tmp/out" 2>"$tmp/err"
has "$tmp/out" '"id":1,"result":\{.*"structuredContent":\{.*"devboxes":\[\]'
lacks "$tmp/out" '"isError":true'
has "$tmp/err" "started devboxd $root/usr/bin/devboxd"
"$B" engine status >"$tmp/out" 2>&1
has "$tmp/out" "version: +devboxd [0-9]"
"$B" engine stop >"$tmp/out" 2>&1
has "$tmp/out" "stopped in"

# The -dev package: the SDK example built out of tree against the root,
# loaded by the packaged server.
ex=$root/usr/share/doc/runloop-mcp/sdk/examples/hello
if cmake -S "$ex" -B "$tmp/hello" -DCMAKE_PREFIX_PATH="$root/usr" >"$tmp/hello.log" 2>&1 &&
    cmake --build "$tmp/hello" >>"$tmp/hello.log" 2>&1; then
    pass "the example builds against runloop-mcp-dev"
else
    fail "the example does not build"; tail -20 "$tmp/hello.log"
fi
printf 'plugins:\n  - {name: hello, path: %s}\n' "$tmp/hello/rlmcp_hello.so" >"$tmp/hello.yaml"
"$B" --list-tools -c "$tmp/hello.yaml" >"$tmp/out" 2>&1
has "$tmp/out" "^hello +hello"
# The .pc file is relocatable: its include dir is found from its own place.
inc=$(PKG_CONFIG_PATH=$root/usr/lib/pkgconfig pkg-config --cflags-only-I rlmcp-plugin)
inc=${inc#-I}
inc=${inc%% *}
if [ "$(realpath "$inc")" = "$root/usr/include" ] && [ -f "$inc/rlmcp/plugin.h" ]; then
    pass "pkg-config rlmcp-plugin points into the root"; else fail "pkg-config include dir: $inc"; fi

# --- units and man pages ---------------------------------------------------------------
for u in runloop-mcp devboxd; do
    # verify checks ExecStart against this root's binaries.
    sed "s|/usr/bin/|$root/usr/bin/|" "$root/usr/lib/systemd/system/$u.service" >"$tmp/$u.service"
    if systemd-analyze verify --man=no "$tmp/$u.service" >"$tmp/out" 2>&1; then
        pass "systemd-analyze verify $u.service"; else fail "verify $u.service"; cat "$tmp/out"; fi
done
has "$root/usr/lib/systemd/system/runloop-mcp.service" "^DynamicUser=yes"
has "$root/usr/lib/systemd/system/runloop-mcp.service" "^ProtectSystem=strict"
has "$root/usr/lib/systemd/system/devboxd.service" "^ExecStart=/usr/bin/devboxd --state-dir /var/lib/devboxd"
for m in man1/runloop-mcp.1 man5/runloop-mcp.yaml.5 man8/devboxd.8; do
    page=$(ls "$root/usr/share/man/$m"* | head -1)
    if zcat -f "$page" | LC_ALL=C.UTF-8 groff -man -ww -z 2>"$tmp/out" && [ ! -s "$tmp/out" ]; then
        pass "groff -ww accepts $m"; else fail "groff on $m"; cat "$tmp/out"; fi
    zcat -f "$page" | grep -q '@VERSION@' && fail "$m has @VERSION@" || pass "$m has its version"
done

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
