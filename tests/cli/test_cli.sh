#!/usr/bin/env bash
# test_cli.sh BIN BUILD_DIR SOURCE_DIR - the runloop-mcp command line:
# --help, --version, usage errors, --check-config (good and every class of
# bad deployment, with file:line:col), --list-tools (table and JSON),
# plugin load failures, secrets kept out of output, and serving on stdio
# until EOF or SIGTERM.
set -uo pipefail

BIN=$(realpath "$1")
BUILD=$(realpath "$2")
SRC=$(realpath "$3")
CONF=$SRC/tests/fixtures/conf
export RLMCP_TEST_FIXTURES=$BUILD/fixtures
export RLMCP_TEST_PLUGINS=$BUILD/plugins
unset RLMCP_CONFIG RLMCP_PLUGIN_DIR

tmp=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# run NAME EXPECTED_EXIT ARGS... : runs BIN, keeps stdout/stderr in $tmp
run() {
    local name=$1 want=$2; shift 2
    "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$?
    if [ "$rc" -eq "$want" ]; then pass "$name (exit $rc)"; else
        fail "$name: exit $rc, expected $want"; sed 's/^/    stderr: /' "$tmp/err"; fi
}
# has FILE TEXT : fixed-string match
has() {
    if grep -qF -- "$2" "$tmp/$1"; then pass "$1 has '$2'"; else
        fail "$1 lacks '$2'"; sed "s/^/    $1: /" "$tmp/$1"; fi
}
lacks() {
    if grep -qF -- "$2" "$tmp/$1"; then fail "$1 has '$2'"; sed "s/^/    $1: /" "$tmp/$1"; else
        pass "$1 lacks '$2'"; fi
}

# --- help, version, usage -------------------------------------------------
run "--help" 0 --help
has out "Usage: runloop-mcp [OPTION]..."
has out "--check-config"
run "-h" 0 -h
run "--version" 0 --version
has out "runloop-mcp "
has out "(plugin ABI 1."
run "unknown option" 2 --frobnicate
has err "unknown option '--frobnicate'; see --help"
run "missing value" 2 --config
has err "option '--config' needs a value"
run "stray argument" 2 "$CONF/good.yaml"
has err "unexpected argument"
run "bad transport" 2 --config "$CONF/good.yaml" --transport carrier-pigeon --check-config
has err "--transport 'carrier-pigeon' is not known; use stdio or http"
run "bad listen" 2 --config "$CONF/good.yaml" --listen nowhere --check-config
has err "--listen 'nowhere' is not HOST:PORT"
run "--json without --list-tools" 2 --config "$CONF/good.yaml" --json

# --- --check-config ---------------------------------------------------------
RLMCP_TEST_SECRET=sekrit-key-123 run "check good deployment" 0 --config "$CONF/good.yaml" --check-config
has out "deployment: $CONF/good.yaml"
has out "transport stdio"
has out "plugins:    2 loaded"
has out "fx_good"
has out "hello"
has out "tools:      3 exposed of 4 registered"
has out "ok"
lacks out "sekrit-key-123"
lacks err "sekrit-key-123"
run "check with --listen" 0 --config "$CONF/good.yaml" --listen 127.0.0.1:0 --check-config
has out "transport http on 127.0.0.1:0"
run "check with --host --port" 0 --config "$CONF/good.yaml" --host 127.0.0.2 --port 8123 --check-config
has out "transport http on 127.0.0.2:8123"
run "check with --port only" 0 --config "$CONF/good.yaml" --port 8124 --check-config
has out "transport http on 127.0.0.1:8124"
run "check with IPv6 --host" 0 --config "$CONF/good.yaml" --host ::1 --port 0 --check-config
has out "transport http on [::1]:0"
run "bad --port" 2 --config "$CONF/good.yaml" --port 80x --check-config
has err "--port '80x' is not a port number; use 0-65535"
run "bad --port range" 2 --config "$CONF/good.yaml" --port 65536 --check-config
has err "--port '65536' is not a port number"
run "bad --host" 2 --config "$CONF/good.yaml" --host "a b" --check-config
has err "--host 'a b' is not a host name or IP address"
run "--listen with --port" 2 --config "$CONF/good.yaml" --listen 127.0.0.1:1 --port 2 --check-config
has err "give --listen HOST:PORT or --host and --port, not both"
# --check-config refuses what serving refuses (beyond loopback without a
# token), but a token from an environment variable unset at check time (an
# image build) is noted as needed at start instead.
run "check an unresolvable listen host" 2 --config "$CONF/good.yaml" --listen locahost.invalid:8000 --check-config
has err "server.http.listen: cannot resolve 'locahost.invalid'"
lacks err "access token"
run "check 0.0.0.0 without a token" 2 --config "$CONF/good.yaml" --listen 0.0.0.0:0 --check-config
has err "refusing to listen on 0.0.0.0:0 without an access token"
lacks out "ok"
sed 's/^server:$/server:\n  http:\n    auth_token: "${RLMCP_TEST_HTTP_TOKEN:-}"/' "$CONF/good.yaml" >"$tmp/token_env.yaml"
env -u RLMCP_TEST_HTTP_TOKEN "$BIN" --config "$tmp/token_env.yaml" --listen 0.0.0.0:0 --check-config >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
[ "$rc" -eq 0 ] && pass "check, token from an unset variable (exit 0)" || { fail "check, token from an unset variable: exit $rc"; cat "$tmp/err"; }
has out 'auth token: from ${RLMCP_TEST_HTTP_TOKEN}, unset now: set it before serving on 0.0.0.0:0'
has out "ok"
RLMCP_TEST_HTTP_TOKEN=0123456789abcdef0123 run "check, token from a set variable" 0 --config "$tmp/token_env.yaml" --listen 0.0.0.0:0 --check-config
lacks out "auth token:"
RLMCP_TEST_HTTP_TOKEN=short run "check, short token from a variable" 2 --config "$tmp/token_env.yaml" --listen 0.0.0.0:0 --check-config
has err "server.http.auth_token is shorter than 16 characters"
env -u RLMCP_TEST_HTTP_TOKEN "$BIN" --config "$tmp/token_env.yaml" --listen 0.0.0.0:0 >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
[ "$rc" -eq 2 ] && pass "serve, token variable unset: refused (exit 2)" || fail "serve, token variable unset: exit $rc"
has err "refusing to listen on 0.0.0.0:0 without an access token"

run "unknown key" 2 --config "$CONF/bad_key.yaml" --check-config
has err "$CONF/bad_key.yaml:6:3: unknown key 'alow' in 'tools'; did you mean 'allow'?"
run "YAML syntax error" 2 --config "$CONF/bad_syntax.yaml" --check-config
has err "$CONF/bad_syntax.yaml:3:22: YAML syntax error"
RLMCP_TEST_SECRET=sekrit-key-123 run "unknown tool" 2 --config "$CONF/unknown_tool.yaml" --check-config
has err "$CONF/unknown_tool.yaml:8:20: unknown tool 'fx_ecko' in 'tools.allow': no loaded plugin registers it; did you mean 'fx_echo'?"
lacks err "sekrit-key-123"
run "missing file" 2 --config "$tmp/none.yaml" --check-config
has err "$tmp/none.yaml: cannot open the deployment file"
run "plugin fails to load" 1 --config "$CONF/bad_plugin.yaml" --check-config
has err "rlmcp_fx_wrong_major.so: plugin ABI 2.0, host ABI 1."
has err "set host.on_plugin_error: skip"
run "skip mode" 0 --config "$CONF/skip_plugin.yaml" --check-config
has out "plugins:    1 loaded, 1 skipped"
has out "tools:      1 exposed of 3 registered"
has err "warning: fx_wrong_major: skipped"

# --- config discovery -----------------------------------------------------
cp "$CONF/good.yaml" "$tmp/env.yaml"
RLMCP_CONFIG=$tmp/env.yaml run "RLMCP_CONFIG" 0 --check-config
has out "deployment: $tmp/env.yaml"
mkdir -p "$tmp/tree/bin" "$tmp/tree/conf"
cp "$BIN" "$tmp/tree/bin/runloop-mcp"
cp "$CONF/good.yaml" "$tmp/tree/conf/runloop-mcp.yaml"
BIN_SAVED=$BIN; BIN=$tmp/tree/bin/runloop-mcp
run "default config next to the binary" 0 --check-config
has out "deployment: $tmp/tree/bin/../conf/runloop-mcp.yaml"
rm "$tmp/tree/conf/runloop-mcp.yaml"
run "no default config" 2 --check-config
has err "no deployment file found"
has err "pass --config FILE or set RLMCP_CONFIG"
BIN=$BIN_SAVED

# --- a plugin's config schema (ABI 1.5) -------------------------------------
run "config valid against the plugin's schema" 0 --config "$CONF/plugin_config.yaml" --check-config
has out "fx_config        1.0.0      ABI 1.5"
run "config the plugin's schema refuses" 1 --config "$CONF/plugin_config_bad.yaml" --check-config
has err "plugin_config_bad.yaml:15:18: plugin 'fx_config': config.names[1]: expected string, got number 7; fix this value"
lacks err "fx_config: config {"
# A real plugin's schema (plugins/lifecycle/schemas/config.json).
cat >"$tmp/lifecycle.yaml" <<'YAML'
runloop: {backend: cloud, base_url: "http://127.0.0.1:9", api_key: k}
plugins:
  - name: lifecycle
    path: ${RLMCP_TEST_PLUGINS}/rlmcp_lifecycle.so
    config:
      create_wait_seconds: 60
      hide_shutdown: "no"
YAML
run "lifecycle config refused by its schema" 1 --config "$tmp/lifecycle.yaml" --check-config
has err "lifecycle.yaml:7:22: plugin 'lifecycle': config.hide_shutdown: expected boolean"
# A misspelt key: the message points at its line and suggests the name.
sed 's/hide_shutdown: "no"/hide_shutdwn: true/' "$tmp/lifecycle.yaml" >"$tmp/lifecycle2.yaml"
run "lifecycle config with a misspelt key" 1 --config "$tmp/lifecycle2.yaml" --check-config
has err "lifecycle2.yaml:7:21: plugin 'lifecycle': config: unknown property 'hide_shutdwn'"
has err "did you mean 'hide_shutdown'?"
# Every bundled plugin with settings declares its section's schema: one bad
# value each, named at its line and column (the value's: 7 + key + 2).
refused_config() {
    local plugin=$1 key=$2 value=$3 says=$4
    local col=$((7 + ${#key} + 2))
    cat >"$tmp/$plugin-bad.yaml" <<YAML
runloop: {backend: cloud, base_url: "http://127.0.0.1:9", api_key: k}
plugins:
  - name: $plugin
    path: \${RLMCP_TEST_PLUGINS}/rlmcp_$plugin.so
    config:
      $key: $value
YAML
    run "$plugin config $key: $value refused by its schema" 1 --config "$tmp/$plugin-bad.yaml" --check-config
    has err "$plugin-bad.yaml:6:$col: plugin '$plugin': $says"
}
refused_config exec max_output_bytes 10 "config.max_output_bytes: must be >= 256, got 10"
refused_config blueprints poll_interval_ms 99 "config.poll_interval_ms: must be >= 100, got 99"
refused_config snapshots mode fast 'config.mode: must be one of "sync", "async"; got string "fast"'
refused_config files max_read_bytes 0 "config.max_read_bytes: must be >= 1, got 0"
refused_config pty tunnel_url_template "https://x.localhost/{port}" \
    "config.tunnel_url_template: string \"https://x.localhost/{port}\" does not match pattern '\\{tunnel_key\\}'"
refused_config pty default_auth_mode public \
    'config.default_auth_mode: must be one of "open", "authenticated"; got string "public"'
refused_config browser executable chromium "config.executable: string \"chromium\" does not match pattern '^/'"
refused_config browser viewport_width 10 "config.viewport_width: must be >= 200, got 10"
# An unknown key is refused, not ignored (files and the others ignored it).
refused_config files max_file_bytes 5 "config: unknown property 'max_file_bytes' (allowed: max_read_bytes,"
# A 1.0 fixture (no schema field) still loads beside it.
run "1.0 plugin still loads" 0 --config "$CONF/good.yaml" --check-config

# --- --list-tools -----------------------------------------------------------
run "list tools" 0 --config "$CONF/good.yaml" --list-tools
has out "TOOL"
if grep -Eq '^echo +fx_good +read-write +\(alias of fx_echo\)$' "$tmp/out"; then pass "echo row"; else fail "echo row"; cat "$tmp/out"; fi
if grep -Eq '^fx_read +fx_good +read-only *$' "$tmp/out"; then pass "fx_read row"; else fail "fx_read row"; cat "$tmp/out"; fi
if grep -Eq '^hello +hello +read-only *$' "$tmp/out"; then pass "hello row"; else fail "hello row"; cat "$tmp/out"; fi
lacks out "fx_other"
if [ "$(tail -n +2 "$tmp/out" | cut -d' ' -f1 | tr '\n' ,)" = "echo,fx_read,hello," ]; then
    pass "sorted by exposed name"; else fail "not sorted"; cat "$tmp/out"; fi
run "list tools --all" 0 --config "$CONF/good.yaml" --list-tools --all
if grep -Eq '^fx_other +fx_good +read-write +no$' "$tmp/out"; then pass "hidden tool shown"; else fail "hidden tool row"; cat "$tmp/out"; fi
run "list tools --json" 0 --config "$CONF/good.yaml" --list-tools --json
if node -e '
const t = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const echo = t.find(x => x.name === "echo");
if (t.length !== 3 || !echo || echo.original_name !== "fx_echo" || echo.plugin !== "fx_good" ||
    !echo.inputSchema.properties.message || echo.inputSchema.properties.text) process.exit(1);
if (!t.find(x => x.name === "hello" && x.read_only === true)) process.exit(1);
' "$tmp/out"; then pass "JSON listing"; else fail "JSON listing"; cat "$tmp/out"; fi

# --- serving on stdio -------------------------------------------------------
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}'
printf '%s\n' "$init" | timeout 60 "$BIN" --config "$CONF/good.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ]; then pass "stdio: exit 0 at EOF"; else fail "stdio: exit $rc at EOF"; cat "$tmp/err"; fi
has out '"id":1'
has out '"serverInfo"'
lacks err "sekrit"

# SIGTERM while idle: clean exit 0, promptly.
mkfifo "$tmp/in"
"$BIN" --config "$CONF/good.yaml" <"$tmp/in" >"$tmp/out" 2>"$tmp/err" &
server_pid=$!
exec 3>"$tmp/in"
printf '%s\n' "$init" >&3
for _ in $(seq 1 600); do grep -q '"id":1' "$tmp/out" && break; sleep 0.1; done
has out '"id":1'
kill -TERM "$server_pid"
for _ in $(seq 1 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then fail "stdio: still running 30 s after SIGTERM"; else
    wait "$server_pid"; rc=$?
    if [ $rc -eq 0 ]; then pass "stdio: exit 0 after SIGTERM"; else fail "stdio: exit $rc after SIGTERM"; cat "$tmp/err"; fi
fi
server_pid=
exec 3>&-

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all CLI checks passed"
