#!/usr/bin/env bash
# fuzz_devboxd.sh: libFuzzer (clang, ASan+UBSan) runs of devboxd's request
# parsing harnesses (tests/fuzz/fuzz_devboxd_*.c): JSON bodies against the
# create and tunnel validators, query strings and tunnel Host headers,
# multipart uploads, Dockerfiles. Prints each harness's executions.
#
#   tests/bench/fuzz_devboxd.sh                 # 10,000,000 executions each
#   tests/bench/fuzz_devboxd.sh --runs 100000   # fewer
#   tests/bench/fuzz_devboxd.sh --out DIR       # keep the build (default: temp)
#   tests/bench/fuzz_devboxd.sh --only body     # one harness (body, query,
#                                               # multipart, dockerfile)
#
# ctest runs the same harnesses over their corpus plus 20,000 mutations
# each without clang (fuzz_replay_devboxd_*). Crashing inputs are saved in
# OUT/artifacts; the script exits non-zero if any harness failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
runs=10000000
out=""
harnesses="body query multipart dockerfile"
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --only)
            case " $harnesses " in
                *" ${2:-} "*) harnesses=$2; shift 2 ;;
                *) echo "fuzz_devboxd.sh: --only takes one of: $harnesses" >&2; exit 2 ;;
            esac ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "fuzz_devboxd.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$runs" in ''|*[!0-9]*) echo "fuzz_devboxd.sh: --runs takes a whole number" >&2; exit 2 ;; esac
command -v clang >/dev/null || { echo "fuzz_devboxd.sh: needs clang (libFuzzer)" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/devboxd-fuzz.XXXXXX)
mkdir -p "$out/obj" "$out/artifacts"

pkgs="libcjson libmicrohttpd libnghttp2 libseccomp libcurl libcrypto"
cflags="-std=gnu11 -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined
 -Wno-unused-parameter -I$src/devboxd -I$src/devboxd/net -I$src/devboxd/rest
 -I$src/devboxd/engine -I$src/devboxd/builder -I$src/devboxd/images
 -I$src/devboxd/store -I$src/devboxd/runtime -I$src/tests/fuzz $(pkg-config --cflags $pkgs)"
cov="-fsanitize=fuzzer-no-link,address,undefined"
link="-fsanitize=fuzzer,address,undefined"
libs="$(pkg-config --libs $pkgs) -lhttp_parser -lpthread -lm"

echo "fuzz: building devboxd with clang in $out"
objs=()
for f in "$src"/devboxd/*.c "$src"/devboxd/{net,rest,engine,build,images,store,runtime}/*.c; do
    [ "$(basename "$f")" = main.c ] && continue
    [ "$(basename "$f")" = build_runtime.c ] && continue
    o="$out/obj/$(basename "$f" .c).o"
    # shellcheck disable=SC2086
    nice clang $cflags $cov -c "$f" -o "$o"
    objs+=("$o")
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for h in $harnesses; do
    # shellcheck disable=SC2086
    nice clang $cflags $cov "$src/tests/fuzz/fuzz_devboxd_$h.c" "${objs[@]}" $link $libs \
        -o "$out/fuzz_devboxd_$h"
    work=$(mktemp -d "$out/corpus-$h.XXXXXX")
    cp "$src/tests/fuzz/corpus/devboxd_$h"/* "$work"/
    start=$(date +%s)
    if nice "$out/fuzz_devboxd_$h" -runs="$runs" -max_len=8192 -timeout=60 -rss_limit_mb=2048 \
           -artifact_prefix="$out/artifacts/$h-" -print_final_stats=1 "$work" \
           >"$out/$h.log" 2>&1; then
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$h.log" | grep -o '[0-9]*$')
        echo "fuzz: devboxd_$h: $execs executions in $(( $(date +%s) - start )) s, 0 crashes," \
             "corpus $(ls "$work" | wc -l) inputs"
    else
        echo "fuzz: devboxd_$h: FAILED, input in $out/artifacts:"
        grep -E "ERROR|fuzz check failed|SUMMARY" "$out/$h.log" | head -5
        status=1
    fi
done
exit $status
