#!/usr/bin/env bash
# check_surfaces.sh BUILD_DIR SOURCE_DIR
#
# Compares `runloop-mcp --list-tools --json` of each deployment in conf/
# with the tool list of the Python runloop-mcp edition it stands for (expected/<name>.txt). Fails when
# an expected tool is missing or an unexpected one appears. Tools marked
# "pending" (their plugin does not exist yet) may be absent or present.
set -u
build=${1:?usage: check_surfaces.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: check_surfaces.sh BUILD_DIR SOURCE_DIR}
bin="$build/bin/runloop-mcp"
here="$src/tests/deployments"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$bin" ]; then
    echo "FAIL: $bin not built" >&2
    exit 1
fi
export RLMCP_PLUGIN_DIR="$build/plugins"
# --list-tools never contacts a backend; keep the environment neutral.
unset RUNLOOP_API_KEY RUNLOOP_BASE_URL
export XDG_STATE_HOME="$tmp/state"

# Every tool the bundled plugins register: the names an exposed text must
# not use unless the deployment exposes that very name.
cat >"$tmp/all.yaml" <<'EOF'
plugins:
  - name: lifecycle
  - name: exec
  - name: files
  - name: snapshots
  - name: blueprints
  - name: pty
  - name: admin
  - name: browser
EOF
if ! "$bin" --config "$tmp/all.yaml" --list-tools --all --json \
    >"$tmp/all.json" 2>"$tmp/err.txt"; then
    echo "FAIL: listing every bundled tool failed:" >&2
    cat "$tmp/err.txt" >&2
    exit 1
fi

status=0
for deployment in testing full runloop-mcp admin; do
    conf="$src/conf/$deployment.yaml"
    expected="$here/expected/$deployment.txt"
    if ! "$bin" --config "$conf" --list-tools --json >"$tmp/out.json" \
        2>"$tmp/err.txt"; then
        echo "FAIL $deployment: runloop-mcp --list-tools exited non-zero:" >&2
        cat "$tmp/err.txt" >&2
        status=1
        continue
    fi
    node -e '
        const fs = require("fs");
        const tools = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        for (const t of tools) console.log(t.name);
    ' "$tmp/out.json" | sort >"$tmp/actual.txt" || { status=1; continue; }
    # No description, parameter description or title names a tool the
    # deployment hides, or a tool by its name before an alias.
    if ! node -e '
        const fs = require("fs");
        const all = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        const tools = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
        const exposed = new Set(tools.map((t) => t.name));
        const hidden = all.map((t) => t.name).filter((n) => !exposed.has(n));
        let bad = 0;
        const walk = (where, v) => {
            if (typeof v === "string") {
                for (const h of hidden) {
                    if (new RegExp(`(^|[^A-Za-z0-9_/])${h}($|[^A-Za-z0-9_])`).test(v)) {
                        console.error(`${where} names hidden tool ${h}: ${v}`);
                        bad++;
                    }
                }
            } else if (v && typeof v === "object") {
                for (const [k, x] of Object.entries(v))
                    if (k === "description" || k === "title" || typeof x === "object")
                        walk(`${where}.${k}`, x);
            }
        };
        for (const t of tools) walk(t.name, t);
        process.exit(bad ? 1 : 0);
    ' "$tmp/all.json" "$tmp/out.json"; then
        echo "FAIL $deployment: exposed text names tools it does not expose" >&2
        status=1
    fi
    grep -v '^\s*#' "$expected" | grep -v '^\s*$' | grep -v '^pending ' |
        sort >"$tmp/required.txt"
    grep '^pending ' "$expected" | awk '{print $2}' | sort >"$tmp/pending.txt"
    sort -u "$tmp/required.txt" "$tmp/pending.txt" >"$tmp/known.txt"
    missing=$(comm -23 "$tmp/required.txt" "$tmp/actual.txt")
    unexpected=$(comm -13 "$tmp/known.txt" "$tmp/actual.txt")
    landed=$(comm -12 "$tmp/pending.txt" "$tmp/actual.txt")
    if [ -n "$missing" ]; then
        echo "FAIL $deployment: missing tools:" $missing >&2
        status=1
    fi
    if [ -n "$unexpected" ]; then
        echo "FAIL $deployment: unexpected tools:" $unexpected >&2
        status=1
    fi
    if [ -n "$landed" ]; then
        echo "note $deployment: pending tools now present (drop 'pending'):" \
            $landed
    fi
    if [ -z "$missing" ] && [ -z "$unexpected" ]; then
        echo "ok $deployment: $(wc -l <"$tmp/actual.txt") tools match" \
            "$(basename "$expected")"
    fi
done
exit $status
