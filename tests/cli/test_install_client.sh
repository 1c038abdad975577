#!/usr/bin/env bash
# test_install_client.sh BIN BUILD_DIR SOURCE_DIR - `runloop-mcp
# install-client`: each client's file format (JSON checked by node's
# parser, Codex's TOML by Python's tomllib), other entries and keys kept,
# the diff shown, --dry-run changing nothing, an update in place, FILE.bak,
# default paths under HOME, the key never written or shown unless asked
# (then mode 0600 and still not shown), and every bad input refused with the
# file left as it was. Then the entry's args and env, given to the server,
# select the deployment and the local engine.
set -uo pipefail

BIN=$(realpath "$1")
BUILD=$(realpath "$2")
SRC=$(realpath "$3")
unset RLMCP_CONFIG RUNLOOP_API_KEY RUNLOOP_BASE_URL XDG_CONFIG_HOME

tmp=$(mktemp -d /tmp/rlmcp-cli-XXXXXX)
export HOME=$tmp/home
mkdir -p "$HOME"
trap 'rm -rf "$tmp"' EXIT

failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
run() {
    local name=$1 want=$2; shift 2
    "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$?
    if [ "$rc" -eq "$want" ]; then pass "$name (exit $rc)"; else
        fail "$name: exit $rc, expected $want"; sed 's/^/    out: /' "$tmp/out"; sed 's/^/    err: /' "$tmp/err"; fi
}
has() {
    if grep -qF -- "$2" "$tmp/$1"; then pass "$1 has '$2'"; else
        fail "$1 lacks '$2'"; sed "s/^/    $1: /" "$tmp/$1"; fi
}
# lacks TEXT FILE
lacks() {
    if grep -qF -- "$1" "$2"; then fail "$2 has '$1'"; sed "s/^/    : /" "$2"; else
        pass "$(basename "$2") lacks '$1'"; fi
}
# js FILE EXPR: EXPR over the parsed JSON file c must be true.
js() {
    if node -e '
const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
process.exit(eval(process.argv[2]) ? 0 : 1)' "$1" "$2"; then pass "$(basename "$1"): $2"; else
        fail "$(basename "$1"): $2"; sed 's/^/    : /' "$1"; fi
}
# toml FILE EXPR: the same for TOML (c is the parsed dict).
toml() {
    if python3 -c '
import sys, tomllib
c = tomllib.load(open(sys.argv[1], "rb"))
sys.exit(0 if (eval(sys.argv[2])) else 1)' "$1" "$2"; then pass "$(basename "$1"): $2"; else
        fail "$(basename "$1"): $2"; sed 's/^/    : /' "$1"; fi
}
same() {
    if cmp -s "$1" "$2"; then pass "$(basename "$1") unchanged"; else fail "$(basename "$1") changed"; diff "$2" "$1"; fi
}

RUN=$(realpath "$SRC/scripts/run")
KEY=ak_30LhTestKey0123456789abcdef

# --- usage and bad input ------------------------------------------------------
run "no client" 2 install-client
has err "Usage: runloop-mcp install-client"
run "unknown client" 2 install-client emacs
has err "'emacs' is not a client this knows; use claude, cursor, vscode or codex"
run "unknown option" 2 install-client cursor --frob
has err "unknown option '--frob'"
run "bad URL" 2 install-client cursor --http ftp://x/mcp
has err "is not an http:// or https:// URL"
run "bad name" 2 install-client cursor --name 'a b'
has err "may hold only letters, digits"
run "--write-key without --cloud" 2 install-client cursor --write-key
has err "--write-key goes with --cloud"
run "Claude Desktop --cloud without --write-key" 2 install-client claude --cloud
has err "Claude Desktop does not expand environment variables"
run "--deployment with --http" 2 install-client cursor --http http://127.0.0.1:8000/mcp -d "$SRC/conf/testing.yaml"
has err "--deployment goes with a stdio server"
run "missing deployment" 2 install-client cursor -d "$tmp/nope.yaml"
has err "nope.yaml cannot be read"
run "--write-key without the variable" 2 install-client cursor --cloud --write-key
has err "RUNLOOP_API_KEY, which is not set"
RUNLOOP_API_KEY='ak_...' "$BIN" install-client cursor --cloud --write-key >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ]; then pass "placeholder key not written (exit 2)"; else fail "placeholder key written"; fi
has err "does not look like a Runloop API key"
if [ ! -e "$HOME/.cursor/mcp.json" ]; then pass "nothing written on refusals"; else fail "a file was written"; fi

# A file that is not JSON (comments, as VS Code allows) is left alone.
printf '// mine\n{"servers": {}}\n' >"$tmp/bad.json"
cp "$tmp/bad.json" "$tmp/bad.orig"
run "not JSON" 1 install-client vscode -c "$tmp/bad.json"
has err "is not a JSON object (comments or a trailing comma?); it was left alone"
has err '"type": "stdio"'
same "$tmp/bad.json" "$tmp/bad.orig"
echo '{"mcpServers": []}' >"$tmp/arr.json"
run "mcpServers not an object" 1 install-client cursor -c "$tmp/arr.json"
has err '"mcpServers" in'
mkdir "$tmp/dir.json"
run "a directory" 1 install-client cursor -c "$tmp/dir.json"
has err "is not a regular file"

# --- Cursor: default path, local engine, other entries kept --------------------
mkdir -p "$HOME/.cursor"
cat >"$HOME/.cursor/mcp.json" <<'EOF'
{"mcpServers": {"other": {"command": "other-server", "args": ["-v"]}}, "theme": "dark"}
EOF
cp "$HOME/.cursor/mcp.json" "$tmp/cursor.orig"
run "cursor --dry-run" 0 install-client cursor --dry-run
has out "--- $HOME/.cursor/mcp.json (before)"
has out '+    "runloop": {'
has out "dry run: $HOME/.cursor/mcp.json was not changed"
same "$HOME/.cursor/mcp.json" "$tmp/cursor.orig"
run "cursor" 0 install-client cursor -d "$SRC/conf/testing.yaml"
has out "wrote $HOME/.cursor/mcp.json (the old one is kept as .bak); restart Cursor"
F=$HOME/.cursor/mcp.json
js "$F" 'c.theme === "dark" && c.mcpServers.other.command === "other-server" && c.mcpServers.other.args[0] === "-v"'
js "$F" "c.mcpServers.runloop.command === '$RUN'"
js "$F" "JSON.stringify(c.mcpServers.runloop.args) === JSON.stringify(['--config', '$(realpath "$SRC/conf/testing.yaml")'])"
js "$F" 'c.mcpServers.runloop.env.RUNLOOP_API_KEY === "" && c.mcpServers.runloop.env.RUNLOOP_BASE_URL === ""'
same "$F.bak" "$tmp/cursor.orig"
run "cursor again" 0 install-client cursor -d "$SRC/conf/testing.yaml"
has out "already has this entry for 'runloop'; nothing to change"
# Cloud: a reference to the client's environment, never the key.
RUNLOOP_API_KEY=$KEY "$BIN" install-client cursor --cloud >"$tmp/out" 2>"$tmp/err"
js "$F" 'c.mcpServers.runloop.env.RUNLOOP_API_KEY === "${env:RUNLOOP_API_KEY}" && !("RUNLOOP_BASE_URL" in c.mcpServers.runloop.env)'
js "$F" 'c.mcpServers.other.command === "other-server"'
lacks "$KEY" "$F"
lacks "$KEY" "$tmp/out"
# Cloud with the key written: 0600, and the diff does not show it.
RUNLOOP_API_KEY=$KEY "$BIN" install-client cursor --cloud --write-key >"$tmp/out" 2>"$tmp/err"
js "$F" "c.mcpServers.runloop.env.RUNLOOP_API_KEY === '$KEY'"
if [ "$(stat -c %a "$F")" = 600 ]; then pass "a file with the key is 0600"; else fail "mode $(stat -c %a "$F")"; fi
lacks "$KEY" "$tmp/out"
has out "<the key from RUNLOOP_API_KEY>"
# HTTP.
run "cursor --http" 0 install-client cursor --http http://127.0.0.1:8000/mcp --name rl-http
js "$F" 'c.mcpServers["rl-http"].url === "http://127.0.0.1:8000/mcp" && !("headers" in c.mcpServers["rl-http"]) && !("type" in c.mcpServers["rl-http"])'

# --- Claude Desktop, VS Code: their paths and shapes ------------------------------
run "claude" 0 install-client claude
C=$HOME/.config/Claude/claude_desktop_config.json
js "$C" "c.mcpServers.runloop.command === '$RUN' && c.mcpServers.runloop.args.length === 0"
if [ "$(stat -c %a "$C")" = 644 ]; then pass "a new file without a key is 0644"; else fail "mode $(stat -c %a "$C")"; fi
XDG_CONFIG_HOME=$tmp/xdg "$BIN" install-client vscode --http https://mcp.example.com/mcp --cloud >"$tmp/out" 2>"$tmp/err"
V=$tmp/xdg/Code/User/mcp.json
js "$V" 'c.servers.runloop.type === "http" && c.servers.runloop.url === "https://mcp.example.com/mcp" && c.servers.runloop.headers["X-Runloop-Api-Key"] === "${env:RUNLOOP_API_KEY}"'
run "vscode stdio" 0 install-client vscode -c "$V" --name local
js "$V" 'c.servers.local.type === "stdio" && c.servers.runloop.type === "http"'

# --- Codex: TOML, our table replaced in place, the rest byte for byte -------------
mkdir -p "$HOME/.codex"
cat >"$HOME/.codex/config.toml" <<'EOF'
model = "o3"

[mcp_servers.runloop]
command = "old"

[mcp_servers.runloop.env]
A = "1"

[mcp_servers.other]
command = "y"
EOF
T=$HOME/.codex/config.toml
run "codex" 0 install-client codex
toml "$T" 'c["model"] == "o3" and c["mcp_servers"]["other"] == {"command": "y"}'
toml "$T" "c['mcp_servers']['runloop'] == {'command': '$RUN', 'args': [], 'env': {'RUNLOOP_API_KEY': '', 'RUNLOOP_BASE_URL': ''}}"
if [ "$(grep -c '^\[mcp_servers.runloop' "$T")" -eq 1 ]; then pass "one runloop table"; else fail "runloop tables: $(grep -c '^\[mcp_servers.runloop' "$T")"; cat "$T"; fi
RUNLOOP_API_KEY=$KEY "$BIN" install-client codex --cloud >"$tmp/out" 2>"$tmp/err"
toml "$T" 'c["mcp_servers"]["runloop"]["env_vars"] == ["RUNLOOP_API_KEY"] and "env" not in c["mcp_servers"]["runloop"]'
lacks "$KEY" "$T"
run "codex --http --cloud" 0 install-client codex --http http://127.0.0.1:8000/mcp --cloud --name rl-http
toml "$T" 'c["mcp_servers"]["rl-http"] == {"url": "http://127.0.0.1:8000/mcp", "bearer_token_env_var": "RUNLOOP_API_KEY"}'
run "codex --http --write-key" 2 install-client codex --http http://127.0.0.1:8000/mcp --cloud --write-key
has err "Codex takes an HTTP server's key from an environment variable only"
printf 'model = "o3"' >"$tmp/nonl.toml"
run "codex, no final newline" 0 install-client codex -c "$tmp/nonl.toml"
toml "$tmp/nonl.toml" 'c["model"] == "o3" and "runloop" in c["mcp_servers"]'
# Quotes and backslashes in a path are escaped.
mkdir -p "$tmp/we\"ird\\dir"
cp "$SRC/conf/testing.yaml" "$tmp/we\"ird\\dir/d.yaml"
run "codex, odd deployment path" 0 install-client codex -c "$tmp/odd.toml" -d "$tmp/we\"ird\\dir/d.yaml"
toml "$tmp/odd.toml" "c['mcp_servers']['runloop']['args'][1].endswith('we\"ird\\\\dir/d.yaml')"

# --- the entry's arguments and environment select the deployment -------------------
# Started with exactly the args and env the entry holds (the binary in place
# of scripts/run, which would build first), the server lists the tools of
# conf/testing.yaml (create_sandbox), which the default deployment does not have.
E=$tmp/entry.json
run "entry for the check" 0 install-client cursor -c "$E" -d "$SRC/conf/testing.yaml"
mapfile -t argv < <(node -e 'const e=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).mcpServers.runloop; for (const a of e.args) console.log(a)' "$E")
mapfile -t envv < <(node -e 'const e=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).mcpServers.runloop; for (const [k, v] of Object.entries(e.env)) console.log(k + "=" + v)' "$E")
env "${envv[@]}" RLMCP_PLUGIN_DIR="$BUILD/plugins" "$BIN" --list-tools "${argv[@]}" >"$tmp/out" 2>"$tmp/err"
has out "create_sandbox"
"$BIN" --list-tools >"$tmp/out" 2>"$tmp/err"
if grep -q "^create_sandbox " "$tmp/out"; then fail "the default deployment has create_sandbox too: the check above proves nothing"; else
    pass "the default deployment lacks create_sandbox"; fi
env "${envv[@]}" RLMCP_PLUGIN_DIR="$BUILD/plugins" "$BIN" --check-config "${argv[@]}" >"$tmp/out" 2>"$tmp/err"
has out "local engine"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
