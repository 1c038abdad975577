#!/usr/bin/env bash
# test_engine.sh BIN BUILD_DIR SOURCE_DIR - `runloop-mcp engine
# status|start|stop|logs` against a real devboxd in a throwaway state dir:
# not running (exit 3), start, status (text and JSON: pid, version,
# devboxes, tunnel port), start again (no second engine), logs, stop,
# stop again; bad commands and options; a cloud deployment refused; and a
# placeholder key ("ak_...") refused at start without the key in the output.
set -uo pipefail

BIN=$(realpath "$1")
BUILD=$(realpath "$2")
SRC=$(realpath "$3")
unset RLMCP_CONFIG RUNLOOP_API_KEY RUNLOOP_BASE_URL XDG_STATE_HOME
export RLMCP_PLUGIN_DIR=$BUILD/plugins

# Short: the socket path must fit a unix socket address.
tmp=$(mktemp -d /tmp/rlmcp-eng-XXXXXX)
export RLMCP_STATE_DIR=$tmp/s
cleanup() {
    local pid
    pid=$(awk '$1 == "pid" {print $2; exit}' "$RLMCP_STATE_DIR/devboxd.pid" 2>/dev/null)
    if [ -n "$pid" ] && alive "$pid"; then
        kill "$pid"
        for _ in $(seq 1 600); do alive "$pid" || break; sleep 0.1; done
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# Running (a zombie nobody reaped yet counts as gone).
alive() {
    [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

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
    if grep -qE -- "$2" "$tmp/$1"; then pass "$1 has /$2/"; else
        fail "$1 lacks /$2/"; sed "s/^/    $1: /" "$tmp/$1"; fi
}
lacks() {
    if grep -qF -- "$2" "$tmp/$1"; then fail "$1 has '$2'"; sed "s/^/    $1: /" "$tmp/$1"; else
        pass "$1 lacks '$2'"; fi
}

CONF=$SRC/conf/runloop-mcp.yaml

# --- usage ----------------------------------------------------------------
run "engine without a command" 2 engine
has err "Usage: runloop-mcp engine"
run "engine --help" 0 engine --help
has out "status"
run "unknown engine command" 2 engine restart -c "$CONF"
has err "'restart' is not a command; use status, start, stop or logs"
run "-n with status" 2 engine status -n 5 -c "$CONF"
has err "-n and -f go with logs"
run "bad line count" 2 engine logs -n many -c "$CONF"
has err "is not a line count"
run "unknown option" 2 engine status --frob -c "$CONF"
has err "unknown option '--frob'"
run "missing deployment" 2 engine status -c "$tmp/nope.yaml"
has err "nope.yaml"

# --- not running ----------------------------------------------------------
run "status, nothing runs" 3 engine status -c "$CONF"
has out "engine: +not running"
has out "state dir: $RLMCP_STATE_DIR"
run "status --json, nothing runs" 3 engine status --json -c "$CONF"
if node -e 'const s=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); process.exit(s.running===false && s.state_dir===process.argv[2] ? 0 : 1)' "$tmp/out" "$RLMCP_STATE_DIR"; then
    pass "JSON says not running"; else fail "JSON status wrong"; cat "$tmp/out"; fi
run "logs before any start" 1 engine logs -c "$CONF"
has err "no log at"
run "stop, nothing runs" 0 engine stop -c "$CONF"
has out "no local engine runs"

# --- start, status, logs ---------------------------------------------------
run "start" 0 engine start -c "$CONF"
has out "^started"
has out "engine: +running, pid [0-9]+"
pid=$(awk '$1 == "pid" {print $2; exit}' "$RLMCP_STATE_DIR/devboxd.pid")
run "status" 0 engine status -c "$CONF"
has out "engine: +running, pid $pid, up "
has out "version: +devboxd [0-9]+\.[0-9]+\.[0-9]+"
has out "devboxes: +0 running, 0 in all"
has out "tunnels: +http://\{port\}-\{tunnel_key\}\.localhost:[0-9]+ \(port [0-9]+\)"
has out " +http://127\.0\.0\.1:[0-9]+/tunnel/\{port\}-\{tunnel_key\} \(any client\)"
has out "stop it with: runloop-mcp engine stop"
run "status --json" 0 engine status --json -c "$CONF"
if node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const ok = s.running === true && s.pid === Number(process.argv[2]) &&
  /^\d+\.\d+\.\d+$/.test(s.version) && s.devboxes === 0 &&
  s.devboxes_running === 0 && s.tunnel_port > 0 && s.uptime_seconds >= 0;
process.exit(ok ? 0 : 1)' "$tmp/out" "$pid"; then
    pass "JSON status has pid, version, devboxes, tunnel port"; else fail "JSON status wrong"; cat "$tmp/out"; fi
run "start again" 0 engine start -c "$CONF"
has out "already running \(pid $pid\)"
run "logs" 0 engine logs -n 5 -c "$CONF"
has out "devboxd: listening on unix:"
run "logs -n 0" 0 engine logs -n 0 -c "$CONF"
if [ ! -s "$tmp/out" ]; then pass "logs -n 0 prints nothing"; else fail "logs -n 0 printed"; fi

# A server launched now uses the running engine and leaves it running.
echo '{"jsonrpc":"2.0","id":1,"method":"ping"}' | "$BIN" -c "$CONF" >"$tmp/out" 2>"$tmp/err"
has out '"id":1'
if alive "$pid"; then pass "the engine outlives the server"; else fail "the engine stopped with the server"; fi

# --- stop ------------------------------------------------------------------
run "stop" 0 engine stop -c "$CONF"
has out "stopping devboxd \(pid $pid\)"
has out "stopped in [0-9]+ ms"
if alive "$pid"; then fail "devboxd $pid still runs"; else pass "devboxd $pid is gone"; fi
run "status after stop" 3 engine status -c "$CONF"

# A pid file naming a live process that is not a devboxd: nothing is killed.
sleep 300 &
decoy=$!
printf 'pid %d\n' "$decoy" >"$RLMCP_STATE_DIR/devboxd.pid"
run "stop with a stale pid file" 0 engine stop -c "$CONF"
has out "no local engine runs"
if alive "$decoy"; then pass "the decoy process lives"; else fail "the decoy was killed"; fi
kill "$decoy"; wait "$decoy" 2>/dev/null

# --- a refused start starts no engine ----------------------------------------
# Every setting is checked before the local engine starts: a refusal leaves
# no devboxd behind (none runs now: stopped above).
engines() { # devboxd processes serving this state dir
    local p
    for p in /proc/[0-9]*; do
        tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "--state-dir $RLMCP_STATE_DIR " &&
            alive "${p#/proc/}" && echo "${p#/proc/}"
    done
}
refused_start() { # name error-pattern args...
    local name=$1 pat=$2 left
    shift 2
    run "$name" 2 "$@"
    has err "$pat"
    left=$(engines)
    if [ -z "$left" ]; then pass "$name: no devboxd started"; else
        fail "$name: devboxd $left runs"; kill $left; fi
}
rm -f "$RLMCP_STATE_DIR/devboxd.pid"
refused_start "--host 0.0.0.0 without a token" \
    "refusing to listen on 0\.0\.0\.0:8000 without an access token" -c "$CONF" --host 0.0.0.0
cat >"$tmp/short.yaml" <<EOF
server: {transport: http, http: {listen: "0.0.0.0:0", auth_token: "\${RLMCP_TEST_TOKEN}"}}
runloop: {backend: local}
plugins: [{name: lifecycle}]
EOF
RLMCP_TEST_TOKEN=short refused_start "a short token from the environment" \
    "auth_token is shorter than 16 characters" -c "$tmp/short.yaml"
# An address in use is only found when binding, after the engine started:
# the engine this start began is stopped again.
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(600)' >"$tmp/busy" &
busy=$!
for _ in $(seq 1 100); do [ -s "$tmp/busy" ] && break; sleep 0.1; done
run "--listen on an address in use" 1 -c "$CONF" --listen "127.0.0.1:$(cat "$tmp/busy")"
has err "started devboxd"
has err "stopping the local engine this start began \(devboxd pid [0-9]+\)"
left=$(engines)
if [ -z "$left" ]; then pass "address in use: no devboxd left"; else
    fail "address in use: devboxd $left runs"; kill $left; fi
# An engine another client may be using by now is left running: a stand-in
# devboxd that lists a devbox created after it started (another host's).
cat >"$tmp/fake-devboxd" <<'PY'
#!/usr/bin/env python3
import fcntl, json, os, socketserver, sys, time
from http.server import BaseHTTPRequestHandler
state = sys.argv[sys.argv.index('--state-dir') + 1]
sock = sys.argv[sys.argv.index('--listen') + 1][len('unix:'):]
os.makedirs(state, exist_ok=True)
lock = open(os.path.join(state, 'devboxd.lock'), 'w')
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
class H(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def address_string(self): return 'unix'
    def do_GET(self):
        body = json.dumps({'devboxes': [{'id': 'dbx_other_client', 'status': 'running',
                           'create_time_ms': int(time.time() * 1000)}],
                           'has_more': False, 'total_count': 1}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
if os.path.exists(sock): os.unlink(sock)
srv = S(sock, H)
with open(os.path.join(state, 'devboxd.pid'), 'w') as f: f.write('pid %d\n' % os.getpid())
srv.serve_forever()
PY
chmod +x "$tmp/fake-devboxd"
cat >"$tmp/fake.yaml" <<EOF
runloop: {backend: local, devboxd: "$tmp/fake-devboxd"}
plugins: [{name: lifecycle}]
EOF
RLMCP_STATE_DIR=$tmp/f run "address in use, engine used meanwhile" 1 -c "$tmp/fake.yaml" --listen "127.0.0.1:$(cat "$tmp/busy")"
has err "leaving the local engine this start began running \(devboxd pid [0-9]+\): another client created devbox dbx_other_client on it since"
fake=$(awk '$1 == "pid" {print $2; exit}' "$tmp/f/devboxd.pid" 2>/dev/null)
if [ -n "$fake" ] && alive "$fake"; then pass "engine used meanwhile: left running"; kill "$fake"; else
    fail "engine used meanwhile: stopped (pid '$fake')"; fi
kill "$busy"; wait "$busy" 2>/dev/null
run "status: still not running" 3 engine status -c "$CONF"

# --- not the local engine ----------------------------------------------------
cat >"$tmp/cloud.yaml" <<EOF
runloop: {backend: cloud, base_url: "http://127.0.0.1:9", api_key: "ak_test_0123456789"}
plugins: [{name: lifecycle}]
EOF
run "cloud deployment" 2 engine status -c "$tmp/cloud.yaml"
has err "uses the Runloop API at http://127.0.0.1:9, not the local engine"
lacks err "ak_test_0123456789"

# --- placeholder keys ----------------------------------------------------------
for key in 'ak_...' 'ak_xxxx' '<your key>' 'ak_…'; do
    RUNLOOP_API_KEY=$key "$BIN" -c "$CONF" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    if [ "$rc" -eq 1 ]; then pass "placeholder '$key' refused (exit 1)"; else fail "placeholder '$key': exit $rc"; fi
    has err "RUNLOOP_API_KEY looks like a placeholder copied from an example"
    lacks err "$key"
done
RUNLOOP_API_KEY='ak_...' "$BIN" -c "$CONF" --check-config >"$tmp/out" 2>"$tmp/err"
has out "backend: +error: RUNLOOP_API_KEY looks like a placeholder"
# A real-looking key goes on to the cloud (only the check runs here).
RUNLOOP_API_KEY='ak_30Lh3tZjrEXAMPLEKEYgQ' "$BIN" -c "$CONF" --check-config >"$tmp/out" 2>"$tmp/err"
has out "backend: +Runloop API at"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
