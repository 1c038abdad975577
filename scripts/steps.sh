# steps.sh: the steps scripts/run and scripts/test share, sourced by both.
# Every step prints one line to stderr ("<script>: <what>"), so a launch is
# never silent for long: stdout belongs to the MCP protocol.
#
# Steps, in order:
#   steps_bootstrap MODE   packages (MODE run: build and run; test: also the
#                          test clients), skipped while the stamp of their
#                          inputs (scripts/bootstrap, tests/package*.json) holds
#   steps_build DIR ARGS   configure when needed, build with a progress count
#                          ($STEPS_TARGET only, when set)
#   steps_images DIR [DEPLOYMENT]
#                          the local engine's images: runs scripts/images
#                          BUILD_DIR [DEPLOYMENT] when that script exists (it must print its
#                          own step lines and return at once when nothing changed)

STEPS_NAME=${STEPS_NAME:-scripts/$(basename "$0")}

step() {
    printf '%s: %s\n' "$STEPS_NAME" "$*" >&2
}

# The inputs of bootstrap, as one string: sizes and checksums.
steps_bootstrap_key() {
    cksum "${STEPS_BOOTSTRAP_INPUTS[@]}" 2>/dev/null || true
}

# steps_bootstrap run|test [--install]: run mode never installs unless told
# (a launch by an MCP client must not wait on apt-get or sudo).
STEPS_BOOTSTRAP_INPUTS=(scripts/bootstrap tests/package.json tests/package-lock.json)

steps_bootstrap() {
    local mode=$1 install=${2:-}
    local key stamp="$STEPS_STAMP_DIR/.bootstrap-$mode" have= f newer=0
    [ "$mode" == test ] && [ ! -d tests/node_modules ] && newer=1
    # Fast path, builtins only: no input is newer than the stamp.
    if [ -f "$stamp" ] && [ "$newer" -eq 0 ]; then
        for f in "${STEPS_BOOTSTRAP_INPUTS[@]}"; do
            [ "$f" -nt "$stamp" ] && newer=1
        done
        [ "$newer" -eq 0 ] && return 0
    fi
    key=$(steps_bootstrap_key)
    # read -d '' reads to the end and then returns 1: not a failure here
    # (under set -e it would end the script without a word).
    if [ -f "$stamp" ]; then IFS= read -r -d '' have <"$stamp" || true; fi
    if [ "$have" == "$key" ] && { [ "$mode" == run ] || [ -d tests/node_modules ]; }; then
        touch "$stamp" # touched, not changed (a checkout): no work
        return 0
    fi
    if [ "$mode" == run ] && [ -z "$install" ]; then
        step "checking packages (scripts/bootstrap --check --run)"
        scripts/bootstrap --check --run || return 1
    elif [ "$mode" == run ]; then
        step "installing packages to build and run (scripts/bootstrap --run)"
        scripts/bootstrap --run || return 1
    else
        step "installing packages and test clients (scripts/bootstrap)"
        scripts/bootstrap || return 1
    fi
    mkdir -p "$STEPS_STAMP_DIR"
    printf '%s' "$key" >"$stamp"
    # The full set covers the run set too.
    [ "$mode" == test ] && printf '%s' "$key" >"$STEPS_STAMP_DIR/.bootstrap-run"
    return 0
}

# Whether DIR's last successful build is older than a source of the build
# (C sources, headers, CMake files). Builtins only: this runs on every launch.
steps_build_stale() {
    local stamp=$1/.built f
    [ -f "$stamp" ] || return 0
    shopt -s globstar nullglob
    # One walk per tree (a brace list of patterns would walk each once per
    # pattern).
    for f in CMakeLists.txt conf/*.yaml {host,plugins,sdk,devboxd,tests/fixtures}/**; do
        case $f in
            *.c | *.h | *.in | *.cmake | *CMakeLists.txt | *.yaml)
                if [ "$f" -nt "$stamp" ]; then
                    shopt -u globstar nullglob
                    return 0
                fi ;;
        esac
    done
    shopt -u globstar nullglob
    return 1
}

# Build output, one line per compiled file with the percentage done.
# The whole output stays in DIR/build.log for when it fails.
steps_progress() {
    local log=$1 line
    : >"$log"
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$log"
        if [[ $line =~ ^\[\ *([0-9]+)%\]\ (Building|Linking)\ C\ ([a-z ]+)\ (.*)$ ]]; then
            local pct=${BASH_REMATCH[1]} what=${BASH_REMATCH[4]}
            if [[ $what =~ ^(.*)CMakeFiles/[^/]+\.dir/(.*)\.o$ ]]; then
                what=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
            fi
            while [[ $what == ../* ]]; do what=${what#../}; done
            step "building [$pct%] $what"
        fi
    done
}

# steps_build DIR [CMAKE ARGS...]
steps_build() {
    local dir=$1 t0=$SECONDS rc=0
    shift
    [ -n "${STEPS_JOBS:-}" ] || STEPS_JOBS=$(nproc 2>/dev/null || echo 2)
    if [ ! -f "$dir/CMakeCache.txt" ]; then
        step "configuring $dir ($*)"
        mkdir -p "$dir"
        if ! cmake -S . -B "$dir" "$@" >"$dir/configure.log" 2>&1; then
            cat "$dir/configure.log" >&2
            step "configuring failed; the output is above (also in $dir/configure.log)"
            return 1
        fi
    elif [ $# -gt 0 ]; then
        cmake -S . -B "$dir" "$@" >/dev/null
    fi
    step "building $dir${STEPS_TARGET:+ (${STEPS_TARGET})} with $STEPS_JOBS jobs"
    # pipefail (set by the callers) makes cmake's status the pipeline's.
    cmake --build "$dir" ${STEPS_TARGET:+--target "$STEPS_TARGET"} -j"$STEPS_JOBS" 2>&1 |
        steps_progress "$dir/build.log" || rc=$?
    if [ "$rc" -ne 0 ]; then
        grep -E ': (fatal )?error:|: warning:|Error [0-9]' "$dir/build.log" | head -40 >&2 || true
        tail -n 20 "$dir/build.log" >&2
        step "building $dir failed; the whole output is in $dir/build.log"
        return 1
    fi
    touch "$dir/.built"
    step "built $dir in $((SECONDS - t0)) s"
}

steps_images() {
    if [ -x scripts/images ]; then
        scripts/images "$@"
    fi
}

STEPS_STAMP_DIR=${STEPS_STAMP_DIR:-build}
