#!/usr/bin/env bash
# test_scripts.sh SOURCE_DIR - scripts/run's launch path in a copy of the
# scripts: the bootstrap check runs once and then only when its inputs
# change (a touch without a change costs a checksum, no check); launched
# without a terminal it never runs apt-get or sudo but names what is missing
# and how to install it, and exits 1; each step prints a line on stderr and
# stdout stays clean; the build's progress lines; the default devbox image
# is built ahead (once), and two launches at once do not build together.
set -uo pipefail

SRC=$(realpath "$1")
# The launch path of the local engine, with its default image.
unset RUNLOOP_API_KEY RUNLOOP_BASE_URL RLMCP_DEVBOX_IMAGE
tmp=$(mktemp -d /tmp/rlmcp-scripts-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }
has() {
    if grep -qF -- "$2" "$1"; then pass "$(basename "$1") has '$2'"; else
        fail "$(basename "$1") lacks '$2'"; sed 's/^/    : /' "$1"; fi
}

# The tree: the real scripts and lockfiles, a stand-in server binary that
# says how it was started, and a build newer than every source.
T=$tmp/tree
mkdir -p "$T/scripts" "$T/tests" "$T/build/bin"
cp "$SRC/scripts/run" "$SRC/scripts/bootstrap" "$SRC/scripts/steps.sh" "$SRC/scripts/images" \
    "$T/scripts/"
cp "$SRC/tests/package.json" "$SRC/tests/package-lock.json" "$T/tests/"
cat >"$T/build/bin/runloop-mcp" <<'EOF'
#!/bin/sh
echo "server $*"
EOF
chmod +x "$T/build/bin/runloop-mcp"
# A stand-in image builder: --check answers 3 (not built) until a build ran;
# a build prints progress on stderr and the image's directory on stdout.
cat >"$T/build/bin/devboxd-image" <<EOF
#!/bin/sh
echo "\$*" >>"$tmp/image-calls"
if [ "\$1" = --check ]; then [ -e "$tmp/image-built" ] || exit 3; echo /img; exit 0; fi
echo "devboxd-image: building the \$1 image" >&2
# Held while image-hold exists (bounded), as a long build would be.
n=0
while [ -e "$tmp/image-hold" ] && [ \$n -lt 2400 ]; do sleep 0.05; n=\$((n + 1)); done
touch "$tmp/image-built"
echo /img
EOF
chmod +x "$T/build/bin/devboxd-image"
touch "$T/build/.built"

# Spies first on PATH: dpkg-query (answers "installed" for everything and
# counts its calls), and apt-get and sudo, which must never run.
spy=$tmp/spy
mkdir -p "$spy"
cat >"$spy/dpkg-query" <<EOF
#!/bin/bash
echo x >>"$tmp/dpkg-calls"
for p in "\${@:3}"; do
    [ "\$p" = rlmcp-no-such-package ] && continue
    echo "\$p install ok installed"
done
EOF
for t in apt-get sudo; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/forbidden"\nexit 1\n' "$t" "$tmp" >"$spy/$t"
done
chmod +x "$spy"/*
export PATH=$spy:$PATH
calls() { [ -f "$tmp/dpkg-calls" ] && wc -l <"$tmp/dpkg-calls" || echo 0; }

# 1. First launch (no terminal): one check, the server starts, stdout clean.
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && pass "first launch (exit 0)" || fail "first launch: exit $rc"
has "$tmp/err" "scripts/run: checking packages (scripts/bootstrap --check --run)"
if [ "$(cat "$tmp/out")" = "server --version" ]; then pass "stdout holds only the server's output"; else
    fail "stdout: $(cat "$tmp/out")"; fi
[ "$(calls)" -eq 1 ] && pass "one package check" || fail "package checks: $(calls)"

# The default image is built ahead, once; without a terminal in the
# background, its progress in the build dir's log.
has "$tmp/err" "scripts/images: building the starter image for devboxes in the background"
for _ in $(seq 600); do [ -e "$tmp/image-built" ] && break; sleep 0.05; done
if grep -qx starter "$tmp/image-calls"; then pass "the builder ran for the starter image"; else
    fail "builder calls: $(cat "$tmp/image-calls" 2>/dev/null)"; fi
for _ in $(seq 600); do grep -q "building the starter image" "$T/build/image-build.log" 2>/dev/null && break; sleep 0.05; done
has "$T/build/image-build.log" "devboxd-image: building the starter image"

# 2. Later launches: no check, nothing on stderr.
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
[ "$(calls)" -eq 1 ] && pass "no check on a warm launch" || fail "warm launch checked again"
if [ ! -s "$tmp/err" ]; then pass "a warm launch prints nothing"; else fail "warm launch printed"; cat "$tmp/err"; fi
"$T/scripts/run" --http 127.0.0.1:0 --config x.yaml </dev/null >"$tmp/out" 2>"$tmp/err"
if [ "$(cat "$tmp/out")" = "server --transport http --listen 127.0.0.1:0 --config x.yaml" ]; then
    pass "--http ADDR becomes --transport http --listen ADDR"; else fail "args: $(cat "$tmp/out")"; fi

if [ "$(grep -cvx -- '--check starter' "$tmp/image-calls")" -eq 1 ]; then
    pass "a built image is not built again"; else fail "builder calls: $(cat "$tmp/image-calls")"; fi
# From a terminal (script(1) gives one) the build runs in the foreground
# with its progress.
rm -f "$tmp/image-built"
script -qec "'$T/scripts/images' '$T/build'" /dev/null </dev/null >"$tmp/tty-out" 2>&1
has "$tmp/tty-out" "scripts/images: building the starter image for devboxes (once per machine; its progress follows)"
has "$tmp/tty-out" "devboxd-image: building the starter image"
has "$tmp/tty-out" "scripts/images: built the starter image in"
# A cloud backend needs no image; "host" (once the host's /usr) is no image:
# devboxd refuses it by name, nothing is built for it.
rm -f "$tmp/image-calls"
RUNLOOP_API_KEY=k "$T/scripts/run" --version </dev/null >/dev/null 2>&1
RLMCP_DEVBOX_IMAGE=host "$T/scripts/run" --version </dev/null >/dev/null 2>&1
if [ ! -e "$tmp/image-calls" ]; then pass "no image for a cloud backend or a name that is no image"; else
    fail "builder ran: $(cat "$tmp/image-calls")"; fi

# 2a. A deployment whose tools need more images gets them all, in the
#     order a user meets them, in one background chain.
rm -f "$tmp/image-calls" "$tmp/image-built"
mkdir -p "$T/deploy"
cat >"$T/deploy/langs.yaml" <<'YAML'
plugins:
  - name: exec
    config:
      languages:
        python: {extension: py, command: "python3 {file}", blueprint: runloop/universal-ubuntu-24.04-x86_64}
  - name: browser
  - name: desktop
YAML
"$T/scripts/run" --version --config deploy/langs.yaml </dev/null >"$tmp/out" 2>"$tmp/err"
has "$tmp/err" "scripts/images: building the starter, universal, browser, desktop images for devboxes in the background"
for _ in $(seq 600); do [ "$(grep -cv -- --check "$tmp/image-calls" 2>/dev/null)" = 4 ] && break; sleep 0.05; done
if [ "$(grep -v -- --check "$tmp/image-calls" | tr '\n' ' ')" = "starter universal browser desktop " ]; then
    pass "the deployment's images were built in order"; else fail "builder calls: $(cat "$tmp/image-calls")"; fi
# The default deployment of a tree without one: only the default image.
rm -f "$tmp/image-calls" "$tmp/image-built"
"$T/scripts/run" --version --config deploy/none.yaml </dev/null >"$tmp/out" 2>"$tmp/err"
has "$tmp/err" "scripts/images: building the starter image for devboxes in the background"
for _ in $(seq 600); do [ -e "$tmp/image-built" ] && break; sleep 0.05; done
touch "$tmp/image-built"

# 2b. A second launch while one holds the build lock waits for it and only
#     then starts its server.
mkfifo "$tmp/release"
(
    exec 9>"$T/build/.run.lock"
    flock 9
    touch "$tmp/held"
    read -r _ <"$tmp/release"
) &
holder=$!
for _ in $(seq 600); do [ -e "$tmp/held" ] && break; sleep 0.05; done
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err" &
runner=$!
for _ in $(seq 600); do grep -q "waiting for another" "$tmp/err" && break; sleep 0.05; done
has "$tmp/err" "scripts/run: waiting for another scripts/run to finish building"
if [ ! -s "$tmp/out" ]; then pass "no server while the other launch builds"; else
    fail "server started under the lock: $(cat "$tmp/out")"; fi
echo go >"$tmp/release"
wait "$holder"
wait "$runner"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "server --version" ]; then
    pass "the waiting launch starts its server once the lock is free"; else
    fail "after the lock: exit $rc, stdout '$(cat "$tmp/out")'"; fi

# 2c. A background image build does not hold the build lock: a second
#     launch while it still builds starts its server without waiting.
rm -f "$tmp/image-built" "$tmp/image-calls"
touch "$tmp/image-hold"
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
for _ in $(seq 600); do grep -qx starter "$tmp/image-calls" 2>/dev/null && break; sleep 0.05; done
if grep -qx starter "$tmp/image-calls"; then pass "an image build runs in the background"; else
    fail "no background build: $(cat "$tmp/image-calls" 2>/dev/null)"; fi
"$T/scripts/run" --version </dev/null >"$tmp/out2" 2>"$tmp/err2" &
runner=$!
for _ in $(seq 600); do
    { [ -s "$tmp/out2" ] || grep -q "waiting for another" "$tmp/err2"; } && break
    sleep 0.05
done
if [ "$(cat "$tmp/out2")" = "server --version" ] && ! grep -q "waiting for another" "$tmp/err2"; then
    pass "a background image build does not block the next launch"; else
    fail "next launch during an image build: stdout '$(cat "$tmp/out2")', stderr '$(cat "$tmp/err2")'"; fi
rm -f "$tmp/image-hold"
wait "$runner"
for _ in $(seq 600); do [ -e "$tmp/image-built" ] && break; sleep 0.05; done

# 3. An input touched but unchanged (a checkout): a checksum, no check.
sleep 1.1 # the stamp's mtime resolution on some filesystems
touch "$T/tests/package-lock.json"
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && pass "touched input: the server starts (exit 0)" || fail "touched input: exit $rc"
if [ "$(cat "$tmp/out")" = "server --version" ]; then pass "touched input: the server ran"; else
    fail "touched input: stdout '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")'"; fi
[ "$(calls)" -eq 1 ] && pass "an unchanged input causes no check" || fail "touched input checked again"
# The same under set -e with no || around the call, as scripts/test makes
# it: reading the stamp (read -d '' returns 1 at its end) is no failure.
sleep 1.1
touch "$T/tests/package.json"
out=$(cd "$T" && bash -c 'set -euo pipefail; STEPS_NAME=t; . scripts/steps.sh
    steps_bootstrap run; echo reached' 2>&1)
[ "$out" = reached ] && pass "steps_bootstrap under set -e reads the stamp and goes on" ||
    fail "steps_bootstrap under set -e: '$out'"

# 4. The package list changes: checked again; a missing package is named,
#    with the install command, exit 1, and no apt-get or sudo.
sleep 1.1
sed -i 's/^    python3 nodejs npm/    rlmcp-no-such-package python3 nodejs npm/' "$T/scripts/bootstrap"
grep -q rlmcp-no-such-package "$T/scripts/bootstrap" || fail "could not edit the package list"
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && pass "missing package: exit 1" || fail "missing package: exit $rc"
[ "$(calls)" -eq 2 ] && pass "a changed list is checked again" || fail "package checks: $(calls)"
has "$tmp/err" "bootstrap: missing Debian packages: rlmcp-no-such-package"
has "$tmp/err" "bootstrap: install them with: sudo apt-get install rlmcp-no-such-package"
if [ ! -s "$tmp/out" ]; then pass "the server did not start"; else fail "server started: $(cat "$tmp/out")"; fi
if [ ! -e "$tmp/forbidden" ]; then pass "no apt-get, no sudo"; else fail "ran: $(cat "$tmp/forbidden")"; fi
# Still missing on the next launch: the failed check left no stamp.
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && pass "still refused on the next launch" || fail "the failed check was stamped"

# 5. Test-only packages are not needed to run.
sed -i 's/rlmcp-no-such-package python3/python3/' "$T/scripts/bootstrap"
cat >"$spy/dpkg-query" <<EOF
#!/bin/bash
echo x >>"$tmp/dpkg-calls"
for p in "\${@:3}"; do
    case "\$p" in wrk|hyperfine) continue ;; esac
    echo "\$p install ok installed"
done
EOF
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && pass "wrk and hyperfine are not needed to run" || { fail "run needs test packages"; cat "$tmp/err"; }
"$T/scripts/bootstrap" --check >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && pass "but the full check wants them" || fail "full check passed without wrk"
has "$tmp/err" "missing Debian packages: wrk hyperfine"
if [ ! -e "$tmp/forbidden" ]; then pass "still no apt-get, no sudo"; else fail "ran: $(cat "$tmp/forbidden")"; fi

# 6. Progress: one line per compiled file, with the percentage, from
#    cmake's own lines; the whole output kept in the log.
(
    cd "$T" && STEPS_NAME=scripts/run && . scripts/steps.sh
    printf '%s\n' \
        '[  3%] Building C object host/CMakeFiles/rlmcp_host.dir/http.c.o' \
        '[ 50%] Linking C executable ../bin/runloop-mcp' \
        'some compiler chatter' \
        '[100%] Building C object plugins/exec/CMakeFiles/test_exec.dir/tests/test_exec.c.o' |
        steps_progress "$tmp/build.log"
) 2>"$tmp/err"
has "$tmp/err" "scripts/run: building [3%] host/http.c"
has "$tmp/err" "scripts/run: building [50%] bin/runloop-mcp"
has "$tmp/err" "scripts/run: building [100%] plugins/exec/tests/test_exec.c"
if ! grep -q chatter "$tmp/err" && grep -q chatter "$tmp/build.log"; then
    pass "other lines go to the log only"; else fail "chatter handling"; fi

# 7. A source newer than the last build makes the launch build (the build
#    itself fails here: there is no CMake project in the copy).
mkdir -p "$T/host"
touch "$T/host/new.c"
"$T/scripts/run" --version </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -ne 0 ] && pass "a changed source starts a build (exit $rc)" || fail "no build"
has "$tmp/err" "scripts/run: configuring"
has "$tmp/err" "configuring failed; the output is above"
if [ ! -s "$tmp/out" ]; then pass "a failed build starts no server"; else fail "server started"; fi

# 8. tests/node_modules as a symbolic link to another install: npm ci would
#    empty what it points to, so bootstrap refuses and names the link.
cat >"$spy/dpkg-query" <<EOF
#!/bin/bash
for p in "\${@:3}"; do echo "\$p install ok installed"; done
EOF
printf '#!/bin/sh\necho "npm $*" >>"%s/npm-calls"\n' "$tmp" >"$spy/npm"
chmod +x "$spy/npm"
mkdir -p "$tmp/shared"
touch "$tmp/shared/keep"
ln -s "$tmp/shared" "$T/tests/node_modules"
"$T/scripts/bootstrap" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && pass "a linked, stale node_modules is refused" || fail "linked node_modules accepted"
has "$tmp/err" "tests/node_modules is a symbolic link to $tmp/shared"
if [ ! -e "$tmp/npm-calls" ] && [ -e "$tmp/shared/keep" ]; then
    pass "npm did not run; the linked install is untouched"; else fail "npm ran: $(cat "$tmp/npm-calls" 2>/dev/null)"; fi
rm "$T/tests/node_modules"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
