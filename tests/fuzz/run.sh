#!/usr/bin/env bash
# Build the fuzz harnesses and replay their corpus; optionally fuzz.
#
#   tests/fuzz/run.sh                 # build + replay the corpus (seconds)
#   tests/fuzz/run.sh --seconds 60    # then fuzz each harness for 60 s
#   tests/fuzz/run.sh --out DIR       # build directory (default: a temp dir)
#
# With clang and libFuzzer the harnesses are libFuzzer binaries with
# ASan+UBSan; without, they are linked with replay.c (cc, ASan+UBSan) and
# only the corpus is replayed. New crashing inputs land in OUT/artifacts.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
seconds=0
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$seconds" in ''|*[!0-9]*) echo "run.sh: --seconds takes a whole number" >&2; exit 2 ;; esac

cleanup_out=""
if [ -z "$out" ]; then
    out=$(mktemp -d /tmp/rlmcp-fuzz.XXXXXX)
    cleanup_out=$out
fi
work=""
cleanup() {
    [ -n "$work" ] && rm -rf "$work"
    # Keep a temp build dir only when it holds crash artifacts.
    if [ -n "$cleanup_out" ] && [ -z "$(ls -A "$cleanup_out/artifacts" 2>/dev/null)" ]; then
        rm -rf "$cleanup_out"
    fi
}
trap cleanup EXIT
mkdir -p "$out/obj" "$out/artifacts"

libfuzzer=0
if command -v clang >/dev/null 2>&1 &&
   echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){return 0;}' |
   clang -x c -fsanitize=fuzzer - -o "$out/probe" >/dev/null 2>&1; then
    libfuzzer=1
    cc=clang
    cov="-fsanitize=fuzzer-no-link,address,undefined"
    link="-fsanitize=fuzzer,address,undefined"
else
    cc=${CC:-cc}
    cov="-fsanitize=address,undefined"
    link="-fsanitize=address,undefined"
fi

cflags="-std=gnu11 -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined
 -fsanitize-recover=float-cast-overflow
 -Wall -Wextra -Wno-unused-parameter $(printf -- "-I%s " "$src"/host/*/) -I$src/sdk/include
 -DRLMCP_VERSION=\"fuzz\" -DRLMCP_INSTALL_PLUGIN_DIR=\"/nonexistent\"
 -DRLMCP_INSTALL_CONF_DIR=\"/nonexistent\" $(pkg-config --cflags libcjson)"
libs="$(pkg-config --libs libcjson yaml-0.1 libcurl libmicrohttpd) -lpthread -ldl -lm"

echo "fuzz: building with $cc (libFuzzer: $libfuzzer) in $out"
objs=()
for f in "$src"/host/*/*.c; do
    [ "$(basename "$f")" = main.c ] && continue
    o="$out/obj/$(basename "$f" .c).o"
    # shellcheck disable=SC2086
    $cc $cflags $cov -c "$f" -o "$o"
    objs+=("$o")
done

harnesses=(schema pattern mcp)
for h in "${harnesses[@]}"; do
    extra=()
    [ $libfuzzer -eq 0 ] && extra=("$here/replay.c")
    # shellcheck disable=SC2086
    $cc $cflags $cov "$here/fuzz_$h.c" "${extra[@]}" "${objs[@]}" $link $libs -o "$out/fuzz_$h"
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for h in "${harnesses[@]}"; do
    corpus="$here/corpus/$h"
    if [ $libfuzzer -eq 1 ]; then
        "$out/fuzz_$h" -runs=0 -artifact_prefix="$out/artifacts/$h-" "$corpus" 2>"$out/$h.replay.log" || {
            echo "fuzz: $h: corpus replay FAILED (see $out/$h.replay.log)"; tail -30 "$out/$h.replay.log"; status=1; continue; }
        echo "fuzz: $h: replayed $(ls "$corpus" | wc -l) corpus inputs"
    else
        "$out/fuzz_$h" "$corpus" 2>"$out/$h.replay.log" || {
            echo "fuzz: $h: corpus replay FAILED (see $out/$h.replay.log)"; tail -30 "$out/$h.replay.log"; status=1; continue; }
        echo "fuzz: $h: $(tail -1 "$out/$h.replay.log" | sed 's/^replay: //') replayed"
    fi
    if [ "$seconds" -gt 0 ] && [ $libfuzzer -eq 1 ]; then
        work=$(mktemp -d /tmp/rlmcp-fuzz-corpus.XXXXXX)
        cp "$corpus"/* "$work"/
        # Known findings (findings/ubsan.supp) must not stop the search.
        if UBSAN_OPTIONS="$UBSAN_OPTIONS:suppressions=$here/findings/ubsan.supp" \
           "$out/fuzz_$h" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
               -artifact_prefix="$out/artifacts/$h-" -print_final_stats=1 "$work" >"$out/$h.fuzz.log" 2>&1; then
            echo "fuzz: $h: $seconds s, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$h.fuzz.log" | grep -o '[0-9]*$') executions, no failure"
        else
            echo "fuzz: $h: FAILED, input saved in $out/artifacts:"; grep -E "ERROR|fuzz check failed|SUMMARY" "$out/$h.fuzz.log" | head -5
            status=1
        fi
        rm -rf "$work"; work=""
    fi
done
[ $status -eq 0 ] && echo "fuzz: all passed" || echo "fuzz: failures above"
exit $status
